//! A walk over a list table's entries in order, chunks and side map merged by name
//! (see [`ListTable::walk`]). Part of `list_table.rs`; reads only.

use smallvec::SmallVec;

use super::entry::Decoder;
use super::side_map;
use super::side_name::SideName;
use super::{ListTable, Name};
use crate::engine::kv::element::{ElementRef, Stored};

/// A walk over a list's entries in order (see [`ListTable::walk`]): a lending
/// iterator, since a chunk's names exist only while it is decoded.
pub struct Walk<'a> {
    pub(super) table: &'a ListTable,
    pub(super) rev: bool,
    pub(super) live_only: bool,
    /// Chunks not yet decoded (the next is at the front, or the back when `rev`).
    pub(super) chunks_left: usize,
    /// The decoded chunk, in list order; `taken` of it consumed from the walk's side.
    /// Forward, entries are decoded one at a time as the walk reaches them (`decoder`),
    /// so a walk that stops early (LPOP, LINDEX 0, LRANGE 0 9) decodes only what it
    /// reads; backward, a chunk's entries are coded against the one before, so the
    /// whole chunk is decoded and reversed. Inline while it holds one entry (a forward
    /// walk's, a backward walk's tail): a walk that reads one element (a pop)
    /// allocates nothing.
    pub(super) buffer: SmallVec<[(Name, ElementRef<'a>); 1]>,
    pub(super) decoder: Option<Decoder<'a>>,
    /// Backward: the chunk whose last entry alone is in `buffer` (read without
    /// decoding, so RPOP and LINDEX -1 decode nothing); the rest of it is decoded only
    /// if the walk goes on.
    pub(super) tail_only_of: Option<usize>,
    pub(super) taken: usize,
    /// The side map's entries, taken from the front (the back when `rev`), and the
    /// next of them once peeked (not boxed: a walk per pop allocates nothing for it).
    pub(super) others: side_map::Iter<'a>,
    pub(super) others_next: Option<Option<&'a (SideName, Stored)>>,
    /// The entry last returned, when it came from the side map.
    pub(super) current: Option<(&'a [u8], ElementRef<'a>)>,
}

impl<'a> Walk<'a> {
    /// The next side-map entry without consuming it.
    fn peek_other(&mut self) -> Option<&'a (SideName, Stored)> {
        let (others, rev) = (&mut self.others, self.rev);
        *self.others_next.get_or_insert_with(|| if rev { others.next_back() } else { others.next() })
    }

    /// The next chunk entry without consuming it.
    fn peek_chunked(&mut self) -> Option<&(Name, ElementRef<'a>)> {
        if !self.rev {
            return self.peek_chunked_forward();
        }
        while self.taken == self.buffer.len() {
            if let Some(i) = self.tail_only_of.take() {
                // The walk goes on past the chunk's last entry: the rest of it, backward.
                self.buffer = SmallVec::from_vec(self.table.chunks[i].decode());
                self.buffer.pop();
                self.buffer.reverse();
                self.taken = 0;
                continue;
            }
            if self.chunks_left == 0 {
                return None;
            }
            let next = self.chunks_left - 1;
            self.chunks_left -= 1;
            let chunk = &self.table.chunks[next];
            self.buffer.clear();
            if let Some(element) = chunk.last_element() {
                self.buffer.push((Name::from_slice(&chunk.last), element));
                self.tail_only_of = Some(next);
            }
            self.taken = 0;
        }
        self.buffer.get(self.taken)
    }

    /// [`Walk::peek_chunked`] forward: the buffer holds the one entry decoded last.
    fn peek_chunked_forward(&mut self) -> Option<&(Name, ElementRef<'a>)> {
        if self.taken == self.buffer.len() {
            self.buffer.clear();
            self.taken = 0;
            loop {
                if let Some(decoder) = &mut self.decoder
                    && let Some((_, element)) = decoder.next_entry()
                {
                    self.buffer.push((Name::from_slice(&decoder.name), element));
                    break;
                }
                if self.chunks_left == 0 {
                    self.decoder = None;
                    return None;
                }
                let next = self.table.chunks.len() - self.chunks_left;
                self.chunks_left -= 1;
                self.decoder = Some(Decoder::new(&self.table.chunks[next]));
            }
        }
        self.buffer.get(self.taken)
    }

    /// The next entry; its name lives until the next call.
    pub fn next_entry(&mut self) -> Option<(&[u8], ElementRef<'a>)> {
        loop {
            let rev = self.rev;
            let other: Option<&'a [u8]> = self.peek_other().map(|(n, _)| n.as_ref());
            let from_others = match (other, self.peek_chunked().map(|(n, _)| n.as_slice())) {
                (None, None) => return None,
                (Some(_), None) => true,
                (None, Some(_)) => false,
                (Some(other), Some(chunked)) => (other < chunked) != rev,
            };
            if from_others {
                let (name, stored) = self.others_next.take().flatten().expect("peeked");
                if self.live_only && !stored.view().exists() {
                    continue;
                }
                self.current = Some((name.as_ref(), stored.view()));
                return self.current;
            }
            self.taken += 1;
            let (name, element) = &self.buffer[self.taken - 1];
            return Some((name.as_slice(), *element));
        }
    }

    /// The next entry with its name copied out (an ordinary iterator's item).
    pub fn next_owned(&mut self) -> Option<(Name, ElementRef<'a>)> {
        self.next_entry().map(|(n, e)| (Name::from_slice(n), e))
    }
}

impl<'a> Iterator for Walk<'a> {
    type Item = (Name, ElementRef<'a>);

    fn next(&mut self) -> Option<Self::Item> {
        self.next_owned()
    }
}
