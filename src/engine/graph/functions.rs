//! The scalar functions (`id`, `labels`, `toUpper`, ...). An unknown name is an error
//! naming it, as FalkorDB's is. Pure.

use super::eval::LIST_LEN_MAX;
use super::store::GraphView;
use super::value::Value;

fn arity(name: &str, args: &[Value], min: usize, max: usize) -> Result<(), String> {
    if args.len() < min {
        return Err(format!("Received {} arguments to function '{name}', expected at least {min}", args.len()));
    }
    if args.len() > max {
        return Err(format!("Received {} arguments to function '{name}', expected at most {max}", args.len()));
    }
    Ok(())
}

fn mismatch(expected: &str, got: &Value) -> String {
    format!("Type mismatch: expected {expected} but was {}", got.type_name())
}

fn int_arg(v: &Value) -> Result<i64, String> {
    match v {
        Value::Int(n) => Ok(*n),
        other => Err(mismatch("Integer", other)),
    }
}

pub fn call(graph: &GraphView, name: &str, args: Vec<Value>) -> Result<Value, String> {
    let (min, max) = match name {
        "range" => (2, 3),
        "substring" => (2, 3),
        "replace" => (3, 3),
        "split" | "left" | "right" => (2, 2),
        "coalesce" => (1, usize::MAX),
        "round" => (1, 1),
        "pi" | "e" => (0, 0),
        _ => (1, 1),
    };
    if !KNOWN.contains(&name) {
        return Err(format!("Unknown function '{name}'"));
    }
    arity(name, &args, min, max)?;
    let a0 = args.first().cloned().unwrap_or(Value::Null);
    // Most functions answer null to a null argument.
    if a0.is_null() && !matches!(name, "coalesce" | "pi" | "e" | "tostring" | "size" | "range") {
        return Ok(Value::Null);
    }
    Ok(match name {
        "id" => match a0 {
            Value::Node(id) | Value::Edge(id) => Value::Int(id.visible()),
            other => return Err(mismatch("Node or Edge", &other)),
        },
        "labels" => match a0 {
            Value::Node(id) => {
                Value::List(graph.nodes.get(&id).map_or_else(Vec::new, |n| n.labels.iter().cloned().map(Value::Str).collect()))
            }
            other => return Err(mismatch("Node", &other)),
        },
        "type" => match a0 {
            Value::Edge(id) => graph.edge(id).map_or(Value::Null, |e| Value::Str(e.typ.to_owned())),
            other => return Err(mismatch("Edge", &other)),
        },
        "startnode" | "endnode" => match a0 {
            Value::Edge(id) => graph.edge(id).map_or(Value::Null, |e| Value::Node(if name == "startnode" { e.src } else { e.dst })),
            other => return Err(mismatch("Edge", &other)),
        },
        "properties" => match a0 {
            Value::Map(_) => a0,
            v @ (Value::Node(_) | Value::Edge(_)) => Value::Map(
                graph.props_of(&v).map_or_else(Vec::new, |p| graph.ordered(p).into_iter().map(|(k, v)| (k.clone(), v.clone())).collect()),
            ),
            other => return Err(mismatch("Map, Node or Edge", &other)),
        },
        "keys" => match a0 {
            Value::Map(entries) => Value::List(entries.into_iter().map(|(k, _)| Value::Str(k)).collect()),
            v @ (Value::Node(_) | Value::Edge(_)) => Value::List(
                graph.props_of(&v).map_or_else(Vec::new, |p| graph.ordered(p).into_iter().map(|(k, _)| Value::Str(k.clone())).collect()),
            ),
            other => return Err(mismatch("Map, Node or Edge", &other)),
        },
        "size" | "length" => match a0 {
            Value::Null => Value::Null,
            Value::List(items) => Value::Int(items.len() as i64),
            Value::Path(_, edges) if name == "length" => Value::Int(edges.len() as i64),
            Value::Str(s) if name == "size" => Value::Int(s.chars().count() as i64),
            other => return Err(mismatch("List, String, or Null", &other)),
        },
        "nodes" | "relationships" => match a0 {
            Value::Path(nodes, edges) => Value::List(if name == "nodes" {
                nodes.into_iter().map(Value::Node).collect()
            } else {
                edges.into_iter().map(Value::Edge).collect()
            }),
            other => return Err(mismatch("Path or Null", &other)),
        },
        "head" | "last" => match a0 {
            Value::List(items) => (if name == "head" { items.first() } else { items.last() }).cloned().unwrap_or(Value::Null),
            other => return Err(mismatch("List or Null", &other)),
        },
        "tail" => match a0 {
            Value::List(items) => Value::List(items.into_iter().skip(1).collect()),
            other => return Err(mismatch("List or Null", &other)),
        },
        "reverse" => match a0 {
            Value::List(mut items) => {
                items.reverse();
                Value::List(items)
            }
            Value::Str(s) => Value::Str(s.chars().rev().collect()),
            other => return Err(mismatch("List, String, or Null", &other)),
        },
        "range" => {
            let (start, end) = (int_arg(&args[0])?, int_arg(&args[1])?);
            let step = args.get(2).map(int_arg).transpose()?.unwrap_or(1);
            if step == 0 {
                return Err("ArgumentError: step argument to range() can't be 0".to_owned());
            }
            let count =
                if (step > 0 && start > end) || (step < 0 && start < end) { 0 } else { (end.abs_diff(start) / step.unsigned_abs()) + 1 };
            if count > LIST_LEN_MAX as u64 {
                return Err(format!("range() of more than {LIST_LEN_MAX} values"));
            }
            Value::List((0..count as i64).map(|i| Value::Int(start + i * step)).collect())
        }
        "coalesce" => args.into_iter().find(|v| !v.is_null()).unwrap_or(Value::Null),
        "tointeger" => match a0 {
            Value::Int(_) => a0,
            Value::Float(f) => Value::Int(f.trunc() as i64),
            Value::Str(s) => s
                .trim()
                .parse::<i64>()
                .map(Value::Int)
                .or_else(|_| s.trim().parse::<f64>().map(|f| Value::Int(f.trunc() as i64)))
                .unwrap_or(Value::Null),
            Value::Bool(b) => Value::Int(b as i64),
            other => return Err(mismatch("Integer, Float, String, Boolean, or Null", &other)),
        },
        "tofloat" => match a0 {
            Value::Int(n) => Value::Float(n as f64),
            Value::Float(_) => a0,
            Value::Str(s) => s.trim().parse::<f64>().map(Value::Float).unwrap_or(Value::Null),
            other => return Err(mismatch("Integer, Float, String, or Null", &other)),
        },
        "toboolean" => match a0 {
            Value::Bool(_) => a0,
            Value::Str(s) if s.eq_ignore_ascii_case("true") => Value::Bool(true),
            Value::Str(s) if s.eq_ignore_ascii_case("false") => Value::Bool(false),
            Value::Str(_) => Value::Null,
            Value::Int(n) => Value::Bool(n != 0),
            other => return Err(mismatch("Boolean, String, Integer, or Null", &other)),
        },
        "tostring" => match a0 {
            Value::Null => Value::Null,
            Value::Str(_) => a0,
            // FalkorDB's toString prints a float with six decimals (C's %f).
            Value::Float(f) => Value::Str(format!("{f:.6}")),
            Value::Int(_) | Value::Bool(_) => {
                let mut out = String::new();
                a0.write_text(&mut out, false);
                Value::Str(out)
            }
            other => return Err(mismatch("Integer, Float, String, Boolean, or Null", &other)),
        },
        "toupper" | "tolower" | "trim" | "ltrim" | "rtrim" => match a0 {
            Value::Str(s) => Value::Str(match name {
                "toupper" => s.to_uppercase(),
                "tolower" => s.to_lowercase(),
                "trim" => s.trim().to_owned(),
                "ltrim" => s.trim_start().to_owned(),
                _ => s.trim_end().to_owned(),
            }),
            other => return Err(mismatch("String or Null", &other)),
        },
        "substring" | "left" | "right" => {
            let Value::Str(s) = a0 else { return Err(mismatch("String or Null", &a0)) };
            let chars: Vec<char> = s.chars().collect();
            let n = |v: &Value| -> Result<usize, String> {
                let n = int_arg(v)?;
                if n < 0 {
                    return Err("length must be a non-negative integer".to_owned());
                }
                Ok(n as usize)
            };
            let (from, len) = match name {
                "substring" => {
                    let from = n(&args[1])?.min(chars.len());
                    (from, args.get(2).map(n).transpose()?.unwrap_or(usize::MAX))
                }
                "left" => (0, n(&args[1])?),
                _ => {
                    let len = n(&args[1])?.min(chars.len());
                    (chars.len() - len, len)
                }
            };
            Value::Str(chars[from..].iter().take(len).collect())
        }
        "replace" => match (&a0, &args[1], &args[2]) {
            (Value::Str(s), Value::Str(from), Value::Str(to)) => Value::Str(s.replace(from.as_str(), to)),
            (_, Value::Null, _) | (_, _, Value::Null) => Value::Null,
            _ => return Err("Type mismatch: expected String or Null".to_owned()),
        },
        "split" => match (&a0, &args[1]) {
            (Value::Str(s), Value::Str(sep)) if sep.is_empty() => Value::List(s.chars().map(|c| Value::Str(c.to_string())).collect()),
            (Value::Str(s), Value::Str(sep)) => Value::List(s.split(sep.as_str()).map(|p| Value::Str(p.to_owned())).collect()),
            (_, Value::Null) => Value::Null,
            _ => return Err("Type mismatch: expected String or Null".to_owned()),
        },
        "abs" => match a0 {
            Value::Int(n) => Value::Int(n.wrapping_abs()),
            Value::Float(f) => Value::Float(f.abs()),
            other => return Err(mismatch("Integer, Float, or Null", &other)),
        },
        "ceil" | "floor" | "round" | "sqrt" | "sign" | "exp" | "log" | "log10" => {
            let Some(f) = a0.as_f64() else { return Err(mismatch("Integer, Float, or Null", &a0)) };
            match name {
                // FalkorDB keeps an integer argument an integer for these three.
                "ceil" | "floor" | "round" if matches!(a0, Value::Int(_)) => a0,
                "ceil" => Value::Float(f.ceil()),
                "floor" => Value::Float(f.floor()),
                "round" => Value::Float(f.round()),
                "sqrt" => Value::Float(f.sqrt()),
                "exp" => Value::Float(f.exp()),
                "log" => Value::Float(f.ln()),
                "log10" => Value::Float(f.log10()),
                _ => Value::Int(if f > 0.0 {
                    1
                } else if f < 0.0 {
                    -1
                } else {
                    0
                }),
            }
        }
        "pi" => Value::Float(std::f64::consts::PI),
        "e" => Value::Float(std::f64::consts::E),
        _ => return Err(format!("Unknown function '{name}'")),
    })
}

const KNOWN: [&str; 44] = [
    "nodes",
    "relationships",
    "id",
    "labels",
    "type",
    "startnode",
    "endnode",
    "properties",
    "keys",
    "size",
    "length",
    "head",
    "last",
    "tail",
    "reverse",
    "range",
    "coalesce",
    "tointeger",
    "tofloat",
    "toboolean",
    "tostring",
    "toupper",
    "tolower",
    "trim",
    "ltrim",
    "rtrim",
    "substring",
    "left",
    "right",
    "replace",
    "split",
    "abs",
    "ceil",
    "floor",
    "round",
    "sqrt",
    "sign",
    "exp",
    "log",
    "log10",
    "pi",
    "e",
    "toint",
    "tolist",
];
