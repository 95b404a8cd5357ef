import redis, time, sys
r = redis.Redis(port=6400)
p = r.pipeline(transaction=False)
t0 = time.time()
for block in range(10):
    tb = time.time()
    for i in range(2000):
        r.lpush("q", "job-%d" % i)
        r.rpop("q")
    print(f"block {block}: {(time.time()-tb)/2000*1e6:.0f} us per push+pop", flush=True)
info = r.info()
print("used_memory", info["used_memory"], "tombstones", info.get("tombstones"))
