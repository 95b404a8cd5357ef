//! The Lua 5.1 interpreter scripts run in (mlua, Lua vendored), with Redis's script
//! environment: `KEYS`, `ARGV`, the `redis` library, read-only globals, and errors
//! shaped as Redis shapes them.
//!
//! One interpreter lives on the coordinator thread, the only thread scripts run on
//! (`script::eval` hands every script to the coordinator with the shards parked), so
//! scripts run one at a time, as in Redis. It keeps each script compiled, by SHA1,
//! until SCRIPT FLUSH, which starts a fresh interpreter.
//!
//! Owns the interpreter and its environment; must never touch a shard itself: a
//! script's commands go to the [`Caller`] it is run with.

use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

use bytes::Bytes;
use mlua::{Function, HookTriggers, Lua, LuaOptions, MultiValue, StdLib, Table, Value, VmState};

use super::ScriptWatch;
use super::convert::{frame_to_lua, lua_to_argument, lua_to_frame};
use crate::protocol::Frame;

/// Runs a script's `redis.call` / `redis.pcall`: a command's words in, its reply out
/// (an error reply for a command a script may not run).
pub trait Caller {
    fn call(&mut self, words: Vec<Bytes>) -> Frame;
}

/// What a script is run with.
pub struct Invocation<'a> {
    /// The body's SHA1, 40 lowercase hex digits.
    pub sha: &'a str,
    pub body: &'a [u8],
    pub keys: &'a [Bytes],
    pub args: &'a [Bytes],
}

/// How often (in Lua instructions) a running script checks the time and SCRIPT KILL.
/// Redis checks every 100,000; a check costs a clock read.
const HOOK_EVERY_INSTRUCTIONS: u32 = 100_000;
/// Bytes the interpreter may allocate, scripts' tables and strings included: past it an
/// allocation fails and the script ends with Lua's `not enough memory` error (Redis
/// has no such bound; one script building an endless table would take the node down).
const LUA_MEMORY_MAX: usize = 1 << 30;
/// Compiled scripts an interpreter keeps at most before it starts afresh (the script
/// cache itself is bounded in `script::cache`; this bounds the interpreter's copies).
const COMPILED_MAX: usize = 10_000;

/// The environment, built once per interpreter. Returns the functions Rust drives:
/// `set_dispatch(f)` installs a run's command runner, `run(f)` calls a compiled script
/// and answers `true, value` or `false, {err=..., source=..., line=...}`.
const PRELUDE: &str = r#"
local dbg = debug
local error, type, tostring, setmetatable, rawset, pairs = error, type, tostring, setmetatable, rawset, pairs
local string, table, math, xpcall = string, table, math, xpcall
local G = _G
local redis_call = ...
local dispatch = nil

-- Where in the user's script an error happened: the innermost frame of user code.
local function where()
  for level = 3, 12 do
    local i = dbg.getinfo(level, 'Sl')
    if i == nil then return nil end
    if i.source == '@user_script' then return i end
  end
  return nil
end

local function handler(err)
  if type(err) ~= 'table' then
    err = {err = 'ERR ' .. tostring(err)}
  end
  if err.source == nil then
    local i = where()
    if i then err.source = i.source; err.line = i.currentline end
  end
  return err
end

local redis = {}
function redis.pcall(...)
  return dispatch(...)
end
redis.call = redis_call
function redis.error_reply(text)
  if type(text) ~= 'string' then error('wrong number or type of arguments', 2) end
  if text:sub(1, 1) == '-' then text = text:sub(2) end
  return {err = text}
end
function redis.status_reply(text)
  if type(text) ~= 'string' then error('wrong number or type of arguments', 2) end
  return {ok = text}
end
redis.LOG_DEBUG, redis.LOG_VERBOSE, redis.LOG_NOTICE, redis.LOG_WARNING = 0, 1, 2, 3
function redis.log(level, ...) end
function redis.setresp(version)
  if version ~= 2 then error('RESP version must be 2 (Meridian scripts speak RESP2)', 2) end
end
function redis.set_repl(mode) end
redis.REPL_NONE, redis.REPL_AOF, redis.REPL_SLAVE, redis.REPL_REPLICA, redis.REPL_ALL = 0, 1, 2, 2, 3
function redis.replicate_commands() return true end
redis.sha1hex = __meridian_sha1hex

-- What a script may not reach: files, other chunks, the environment of functions.
for _, name in pairs({'dofile', 'loadfile', 'load', 'loadstring', 'module', 'require',
                      'setfenv', 'getfenv', 'print', 'collectgarbage', 'newproxy',
                      'debug', '__meridian_sha1hex'}) do
  G[name] = nil
end
G.redis = redis

-- Read-only globals, as Redis 7: the real globals live behind a proxy `_G` that
-- refuses writes and answers a read of a missing name with an error.
local function refuse() error('Attempt to modify a readonly table', 2) end
local locked = setmetatable({}, {__newindex = refuse, __metatable = false})
local backing = {}
for k, v in pairs(G) do backing[k] = v end
backing._G = G
setmetatable(backing, {__index = function(_, name)
  error("Script attempted to access nonexistent global variable '" .. tostring(name) .. "'", 2)
end, __newindex = refuse, __metatable = locked})
for k in pairs(backing) do rawset(G, k, nil) end
local protected = {[G] = true, [backing] = true, [redis] = true, [string] = true,
                   [table] = true, [math] = true}
-- Called with a protected table they fail as Redis's C checks do: no position.
local function refuse_here() error('Attempt to modify a readonly table', 0) end
backing.setmetatable = function(t, mt)
  if protected[t] then refuse_here() end
  return setmetatable(t, mt)
end
backing.rawset = function(t, k, v)
  if protected[t] then refuse_here() end
  return rawset(t, k, v)
end
setmetatable(G, {__index = backing, __newindex = refuse, __metatable = locked})
for _, library in pairs({redis, string, table, math}) do
  local fields = {}
  for k, v in pairs(library) do fields[k] = v end
  for k in pairs(fields) do rawset(library, k, nil) end
  setmetatable(library, {__index = fields, __newindex = refuse, __metatable = locked})
end

local function set_dispatch(f) dispatch = f end
local function set_arguments(keys, argv) rawset(backing, 'KEYS', keys); rawset(backing, 'ARGV', argv) end
local function run(f) return xpcall(f, handler) end
return set_dispatch, set_arguments, run, redis.pcall
"#;

/// Where `redis.call` finds `redis.pcall` (the Lua registry).
const PCALL_REGISTRY_KEY: &std::ffi::CStr = c"meridian.pcall";

/// `redis.call`: `redis.pcall`, then an error reply raised as a Lua error (the table
/// `{err=..., source=..., line=...}`, as Redis raises it).
///
/// A C function, not Lua, on purpose: a script's `return redis.call(...)` is a tail
/// call, and a Lua function called there replaces the script's frame, so the error
/// could not say which line of the script failed; Lua 5.1 never tail-calls a C
/// function. It holds no Rust value across `lua_call` or `lua_error` (either may
/// unwind through it).
unsafe extern "C-unwind" fn redis_call(state: *mut mlua::ffi::lua_State) -> std::os::raw::c_int {
    use mlua::ffi;
    // SAFETY: called by Lua with a valid state and at least LUA_MINSTACK free slots;
    // every push below is matched, and `lua_Debug` is plain data (all zeroes is valid).
    unsafe {
        let nargs = ffi::lua_gettop(state);
        ffi::lua_getfield(state, ffi::LUA_REGISTRYINDEX, PCALL_REGISTRY_KEY.as_ptr());
        ffi::lua_insert(state, 1);
        ffi::lua_call(state, nargs, 1);
        if ffi::lua_istable(state, -1) != 0 {
            ffi::lua_getfield(state, -1, c"err".as_ptr());
            let failed = ffi::lua_isnil(state, -1) == 0;
            ffi::lua_pop(state, 1);
            if failed {
                let mut frame: ffi::lua_Debug = std::mem::zeroed();
                if ffi::lua_getstack(state, 1, &mut frame) != 0 && ffi::lua_getinfo(state, c"Sl".as_ptr(), &mut frame) != 0 {
                    ffi::lua_pushstring(state, frame.source);
                    ffi::lua_setfield(state, -2, c"source".as_ptr());
                    ffi::lua_pushinteger(state, frame.currentline as ffi::lua_Integer);
                    ffi::lua_setfield(state, -2, c"line".as_ptr());
                }
                ffi::lua_error(state);
            }
        }
        1
    }
}

struct ScriptVm {
    lua: Lua,
    set_dispatch: Function,
    set_arguments: Function,
    run: Function,
    compiled: HashMap<String, Function>,
    /// The script cache's flush count this interpreter was made under.
    generation: u64,
}

thread_local! {
    /// The coordinator thread's interpreter (made at its first script).
    static VM: RefCell<Option<ScriptVm>> = const { RefCell::new(None) };
}

impl ScriptVm {
    fn new(generation: u64) -> mlua::Result<ScriptVm> {
        // `debug` is loaded only so that the prelude can keep `getinfo` for error
        // positions; the prelude removes it from the scripts' reach.
        // SAFETY: the debug library is taken out of the globals before any user
        // script runs (PRELUDE's removal list), so no script can use it.
        let lua = unsafe { Lua::unsafe_new_with(StdLib::TABLE | StdLib::STRING | StdLib::MATH | StdLib::DEBUG, LuaOptions::default()) };
        lua.set_memory_limit(LUA_MEMORY_MAX)?;
        let sha1hex = lua.create_function(|lua, text: mlua::LuaString| lua.create_string(sha1_hex(&text.as_bytes())))?;
        lua.globals().raw_set("__meridian_sha1hex", sha1hex)?;
        // SAFETY: `redis_call` keeps to the Lua C API's rules (see its comment).
        let call = unsafe { lua.create_c_function(redis_call)? };
        let (set_dispatch, set_arguments, run, pcall): (Function, Function, Function, Function) =
            lua.load(PRELUDE).set_name("=meridian_prelude").call(call)?;
        lua.set_named_registry_value(PCALL_REGISTRY_KEY.to_str().expect("ASCII"), pcall)?;
        Ok(ScriptVm { lua, set_dispatch, set_arguments, run, compiled: HashMap::new(), generation })
    }

    fn compiled(&mut self, invocation: &Invocation<'_>) -> Result<Function, Frame> {
        if let Some(function) = self.compiled.get(invocation.sha) {
            return Ok(function.clone());
        }
        let function = self.lua.load(invocation.body).set_name("@user_script").into_function().map_err(|error| {
            let message = match &error {
                mlua::Error::SyntaxError { message, .. } => message.clone(),
                other => other.to_string(),
            };
            Frame::error(format!("ERR Error compiling script (new function): {message}"))
        })?;
        if self.compiled.len() >= COMPILED_MAX {
            self.compiled.clear();
        }
        self.compiled.insert(invocation.sha.to_owned(), function.clone());
        Ok(function)
    }

    fn arguments(&self, invocation: &Invocation<'_>) -> mlua::Result<(Table, Table)> {
        let list = |items: &[Bytes]| -> mlua::Result<Table> {
            let table = self.lua.create_table_with_capacity(items.len(), 0)?;
            for (i, item) in items.iter().enumerate() {
                table.raw_set(i + 1, self.lua.create_string(item)?)?;
            }
            Ok(table)
        };
        Ok((list(invocation.keys)?, list(invocation.args)?))
    }
}

/// Run a script to its reply, its commands going to `caller`. `watch` is told of the
/// script's progress (busy past the time limit) and asked whether to stop (SCRIPT KILL).
pub fn run(invocation: &Invocation<'_>, caller: &mut dyn Caller, watch: &Arc<ScriptWatch>, generation: u64) -> Frame {
    VM.with(|cell| {
        let mut slot = cell.borrow_mut();
        if slot.as_ref().is_none_or(|vm| vm.generation != generation) {
            match ScriptVm::new(generation) {
                Ok(vm) => *slot = Some(vm),
                Err(error) => return Frame::error(format!("ERR internal: cannot start the Lua interpreter: {error}")),
            }
        }
        let vm = slot.as_mut().expect("just made");
        let function = match vm.compiled(invocation) {
            Ok(function) => function,
            Err(reply) => return reply,
        };
        let reply = run_compiled(vm, function, invocation, caller, watch);
        if watch.killed() {
            return Frame::error(format!("ERR Script killed by user with SCRIPT KILL... script: {}, on @user_script:1.", invocation.sha));
        }
        reply.unwrap_or_else(|error| Frame::error(format!("ERR internal: Lua: {error}")))
    })
}

fn run_compiled(
    vm: &ScriptVm,
    function: Function,
    invocation: &Invocation<'_>,
    caller: &mut dyn Caller,
    watch: &Arc<ScriptWatch>,
) -> mlua::Result<Frame> {
    let (keys, argv) = vm.arguments(invocation)?;
    vm.set_arguments.call::<()>((keys, argv))?;
    let started = Instant::now();
    let hook_watch = watch.clone();
    vm.lua.set_hook(HookTriggers::new().every_nth_instruction(HOOK_EVERY_INSTRUCTIONS), move |_, _| {
        hook_watch.note_elapsed(started.elapsed());
        if hook_watch.killed() {
            return Err(mlua::Error::RuntimeError("Script killed by user with SCRIPT KILL...".into()));
        }
        Ok(VmState::Continue)
    })?;
    let outcome = vm.lua.scope(|scope| {
        let dispatch = scope.create_function_mut(|lua, words: MultiValue| dispatch(lua, words, caller))?;
        vm.set_dispatch.call::<()>(dispatch)?;
        let (ok, value): (bool, Value) = vm.run.call(function)?;
        vm.set_dispatch.call::<()>(Value::Nil)?;
        Ok((ok, value))
    });
    vm.lua.remove_hook();
    let (ok, value) = outcome?;
    if ok {
        return Ok(lua_to_frame(&value));
    }
    Ok(error_reply(&value, invocation.sha))
}

/// A `redis.call`: the words checked as Redis checks them, then run.
fn dispatch(lua: &Lua, words: MultiValue, caller: &mut dyn Caller) -> mlua::Result<Value> {
    let reply = if words.is_empty() {
        Frame::static_error("ERR Please specify at least one argument for this redis lib call")
    } else {
        match words.iter().map(lua_to_argument).collect::<Option<Vec<Bytes>>>() {
            None => Frame::static_error("ERR Lua redis lib command arguments must be strings or integers"),
            Some(words) => caller.call(words),
        }
    };
    frame_to_lua(lua, reply)
}

/// The reply to a script that ended in an error: Redis 7.0's form, `<error> script:
/// <sha>, on @user_script:<line>.`
fn error_reply(value: &Value, sha: &str) -> Frame {
    let table = match value {
        Value::Table(table) => table,
        // Lua 5.1 calls no error handler for a memory error: its message comes bare.
        Value::String(text) => return Frame::error(format!("ERR {} script: {sha}", String::from_utf8_lossy(&text.as_bytes()))),
        _ => return Frame::static_error("ERR script failed with an unreadable error"),
    };
    let text = match table.raw_get::<Value>("err") {
        Ok(Value::String(s)) => String::from_utf8_lossy(&s.as_bytes()).into_owned(),
        _ => "ERR unknown error".to_owned(),
    };
    let source = table.raw_get::<Option<String>>("source").ok().flatten();
    let line = table.raw_get::<Option<i64>>("line").ok().flatten();
    match (source, line) {
        (Some(source), Some(line)) => Frame::error(format!("{text} script: {sha}, on {source}:{line}.")),
        _ => Frame::error(text),
    }
}

/// The SHA1 of `bytes` as 40 lowercase hex digits (a script's name).
pub fn sha1_hex(bytes: &[u8]) -> String {
    sha1_smol::Sha1::from(bytes).digest().to_string()
}
