//! The commands that take a TTL option (SET, GETEX, the EXPIRE family): their options
//! read as Redis reads them, with its error texts. Part of the parser (`super`).

use super::*;

/// EX/PX/EXAT/PXAT value -> a TTL change, or Redis's "invalid expire time" error.
fn expire_option(unit: &[u8], value: &[u8], command: &str) -> Result<TtlChange, Frame> {
    let amount = int(value)?;
    if amount <= 0 {
        return Err(errors::invalid_expire(command));
    }
    let seconds = eq(unit, "ex") || eq(unit, "exat");
    let ms = if seconds { amount.checked_mul(1000).ok_or_else(|| errors::invalid_expire(command))? } else { amount };
    Ok(if eq(unit, "ex") || eq(unit, "px") { TtlChange::AfterMs(ms as u64) } else { TtlChange::AtMs(ms as u64) })
}

fn is_ttl_option(opt: &[u8]) -> bool {
    eq(opt, "ex") || eq(opt, "px") || eq(opt, "exat") || eq(opt, "pxat")
}

pub(super) fn parse_set(a: &mut [Bytes]) -> Parsed {
    let mut condition = SetCondition::Always;
    // Redis accepts an option repeated (the last one wins) but not two different TTL
    // options or NX with XX.
    let mut ttl_option: Option<(usize, usize)> = None;
    let mut keep_ttl = false;
    let mut get = false;
    let mut i = 3;
    while i < a.len() {
        let opt = &a[i];
        let has_next = i + 1 < a.len();
        if eq(opt, "nx") && condition != SetCondition::IfPresent {
            condition = SetCondition::IfAbsent;
        } else if eq(opt, "xx") && condition != SetCondition::IfAbsent {
            condition = SetCondition::IfPresent;
        } else if eq(opt, "get") {
            get = true;
        } else if eq(opt, "keepttl") && ttl_option.is_none() {
            keep_ttl = true;
        } else if is_ttl_option(opt) && !keep_ttl && ttl_option.is_none_or(|(u, _)| a[u].eq_ignore_ascii_case(opt)) && has_next {
            ttl_option = Some((i, i + 1));
            i += 1;
        } else {
            return Err(errors::error(errors::SYNTAX));
        }
        i += 1;
    }
    let ttl = match ttl_option {
        Some((unit, value)) => expire_option(&a[unit], &a[value], "set")?,
        None if keep_ttl => TtlChange::Keep,
        None => TtlChange::Clear,
    };
    let reply = if get { SetReply::OldValue } else { SetReply::Ok };
    Ok(Command::Key(KeyCommand::Set { key: take(a, 1), value: take(a, 2), condition, ttl, reply, command: "set" }))
}

pub(super) fn parse_getex(a: &mut [Bytes]) -> Parsed {
    let mut ttl_option: Option<(usize, usize)> = None;
    let mut persist = false;
    let mut i = 2;
    while i < a.len() {
        let opt = &a[i];
        let has_next = i + 1 < a.len();
        if is_ttl_option(opt) && !persist && ttl_option.is_none_or(|(u, _)| a[u].eq_ignore_ascii_case(opt)) && has_next {
            ttl_option = Some((i, i + 1));
            i += 1;
        } else if eq(opt, "persist") && ttl_option.is_none() {
            persist = true;
        } else {
            return Err(errors::error(errors::SYNTAX));
        }
        i += 1;
    }
    let ttl = match ttl_option {
        Some((unit, value)) => match expire_option(&a[unit], &a[value], "getex") {
            Ok(change) => GetExTtl::Set(change),
            Err(error) => GetExTtl::Invalid(error),
        },
        None if persist => GetExTtl::Persist,
        None => GetExTtl::Unchanged,
    };
    Ok(Command::Key(KeyCommand::GetEx { key: take(a, 1), ttl }))
}

pub(super) fn parse_expire(id: CmdId, name: &'static str, a: &mut [Bytes]) -> Parsed {
    let mut condition = ExpireCondition::default();
    for opt in &a[3..] {
        if eq(opt, "nx") {
            condition.nx = true;
        } else if eq(opt, "xx") {
            condition.xx = true;
        } else if eq(opt, "gt") {
            condition.gt = true;
        } else if eq(opt, "lt") {
            condition.lt = true;
        } else {
            // Redis formats the option as a C string: it ends at a NUL.
            let shown = &opt[..opt.iter().position(|&b| b == 0).unwrap_or(opt.len())];
            return Err(Frame::error(format!("ERR Unsupported option {}", String::from_utf8_lossy(shown))));
        }
    }
    if condition.nx && (condition.xx || condition.gt || condition.lt) {
        return Err(Frame::static_error("ERR NX and XX, GT or LT options at the same time are not compatible"));
    }
    if condition.gt && condition.lt {
        return Err(Frame::static_error("ERR GT and LT options at the same time are not compatible"));
    }
    let amount = int(&a[2])?;
    let seconds = matches!(id, CmdId::Expire | CmdId::ExpireAt);
    let ms = if seconds { amount.checked_mul(1000).ok_or_else(|| errors::invalid_expire(name))? } else { amount };
    let absolute = matches!(id, CmdId::ExpireAt | CmdId::PExpireAt);
    Ok(Command::Key(KeyCommand::Expire { key: take(a, 1), ms, absolute, condition, command: name }))
}
