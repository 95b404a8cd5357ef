//! FT.* commands: their typed form and their parser (RediSearch's syntax and error
//! texts). The definition and query grammars live with the engine
//! (`engine::vector::{schema, query}`); executing is the shell's fan-out
//! (`shell::vector`) and each shard's vector engine.

use std::sync::Arc;

use bytes::Bytes;

use super::Command;
use super::table::CmdId;
use crate::engine::vector::aggregate::{self, AggregateQuery};
use crate::engine::vector::{SearchQuery, query, schema};
use crate::protocol::Frame;

#[derive(Clone, Debug, PartialEq)]
pub enum VectorCommand {
    /// FT.CREATE: `raw` is the checked definition in its replicated form.
    Create {
        name: Bytes,
        raw: Bytes,
    },
    Search {
        name: Bytes,
        query: Arc<SearchQuery>,
    },
    Info(Bytes),
    List,
    DropIndex {
        name: Bytes,
        delete_docs: bool,
    },
    /// FT.ALTER idx [SKIPINITIALSCAN] SCHEMA ADD field...: `fields` are checked against
    /// the stored definition when it is read.
    Alter {
        name: Bytes,
        fields: Vec<Bytes>,
    },
    Aggregate {
        name: Bytes,
        query: Arc<AggregateQuery>,
    },
}

/// RediSearch's errors carry no `ERR` code: the text is the whole error line.
pub fn error(text: impl Into<String>) -> Frame {
    Frame::error(text.into())
}

/// Parse an FT.* command (`args[0]` is its name; arity already checked).
pub fn parse(id: CmdId, args: &mut [Bytes]) -> Result<Command, Frame> {
    let name = args.get(1).cloned().unwrap_or_default();
    let command = match id {
        CmdId::FtCreate => {
            schema::parse(&args[2..]).map_err(error)?;
            VectorCommand::Create { name, raw: schema::encode_args(&args[2..]) }
        }
        CmdId::FtSearch => VectorCommand::Search { name, query: Arc::new(query::parse_search(&args[2..]).map_err(error)?) },
        CmdId::FtInfo => VectorCommand::Info(name),
        CmdId::FtAggregate => VectorCommand::Aggregate { name, query: Arc::new(aggregate::parse(&args[2..]).map_err(error)?) },
        CmdId::FtAlter => {
            let mut i = 2;
            if args.get(i).is_some_and(|a| a.eq_ignore_ascii_case(b"SKIPINITIALSCAN")) {
                return Err(error("SKIPINITIALSCAN is not supported by Meridian (an index always covers the existing documents)"));
            }
            if !args.get(i).is_some_and(|a| a.eq_ignore_ascii_case(b"SCHEMA")) {
                return Err(error("ALTER must be followed by SCHEMA"));
            }
            if !args.get(i + 1).is_some_and(|a| a.eq_ignore_ascii_case(b"ADD")) {
                return Err(error("Unknown action passed to ALTER SCHEMA"));
            }
            i += 2;
            VectorCommand::Alter { name, fields: args[i..].to_vec() }
        }
        CmdId::FtList => VectorCommand::List,
        CmdId::FtDropIndex => {
            let delete_docs = match args.get(2) {
                None => false,
                Some(a) if a.eq_ignore_ascii_case(b"DD") => true,
                Some(_) => return Err(error("Unknown argument to FT.DROPINDEX (only DD)")),
            };
            VectorCommand::DropIndex { name, delete_docs }
        }
        _ => return Err(Frame::static_error("ERR internal: not an FT command")),
    };
    Ok(Command::Vector(command))
}
