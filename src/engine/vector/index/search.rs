//! An index's searches: a query's filter compiled against the index's fields, run over
//! its postings and columns (exactly, or by a KNN walk of a vector field's graph), the
//! hits scored, sorted and cut. Reads the index only; the documents are maintained by
//! `reindex` in the parent module. Never reads a clock: what is live is handed in.

use super::*;

impl Index {
    /// A filter with its fields resolved, as `mode` says.
    fn compile(&self, filter: &Filter, mode: Mode) -> Result<Compiled, String> {
        Ok(match filter {
            Filter::All => Compiled::All,
            Filter::Tag { field, values } => {
                let Some((i, def)) = self.def.field(field) else { return Ok(Compiled::Nothing) };
                let FieldKind::Tag { case_sensitive, .. } = def.kind else {
                    return Err(format!("Field `{}` is not a TAG field", String::from_utf8_lossy(field)));
                };
                let values = values.iter().map(|v| if case_sensitive { v.clone() } else { Bytes::from(v.to_ascii_lowercase()) }).collect();
                Compiled::Tag(self.positions[i], values)
            }
            Filter::Range { field, lo, lo_exclusive, hi, hi_exclusive } => {
                let Some((i, def)) = self.def.field(field) else { return Ok(Compiled::Nothing) };
                if def.kind != FieldKind::Numeric {
                    return Err(format!("Field `{}` is not a NUMERIC field", String::from_utf8_lossy(field)));
                }
                Compiled::Range(self.positions[i], *lo, *lo_exclusive, *hi, *hi_exclusive)
            }
            Filter::TagPrefix { field, prefixes } => {
                let Some((i, def)) = self.def.field(field) else { return Ok(Compiled::Nothing) };
                let FieldKind::Tag { case_sensitive, .. } = def.kind else {
                    return Err(format!("Field `{}` is not a TAG field", String::from_utf8_lossy(field)));
                };
                let position = self.positions[i];
                Compiled::Tag(position, self.expand_prefixes(position, prefixes, case_sensitive))
            }
            Filter::VectorRange { field, radius, blob, .. } => {
                let (position, vector, _) = self.query_vector(field, blob)?;
                Compiled::Within(self.within(position, &vector, *radius))
            }
            Filter::Text { field, term, prefix } => self.compile_text(field.as_ref(), term, *prefix, mode.verbatim, mode.language)?,
            Filter::Fuzzy { field, term, distance } => self.compile_fuzzy(field.as_ref(), term, *distance)?,
            Filter::Phrase { field, terms } => self.compile_phrase(field.as_ref(), terms)?,
            Filter::Not(inner) => Compiled::Not(Box::new(self.compile(inner, mode)?)),
            Filter::Optional(inner) => Compiled::Optional(Box::new(self.compile(inner, mode)?)),
            Filter::And(parts) => Compiled::And(parts.iter().map(|p| self.compile(p, mode)).collect::<Result<_, _>>()?, mode.near),
            Filter::Or(parts) => Compiled::Or(parts.iter().map(|p| self.compile(p, mode)).collect::<Result<_, _>>()?),
        })
    }

    /// Run a query on this shard's part of the index. `live` says which documents'
    /// keys are still there now (a key past its TTL that active expiry has not removed
    /// yet is not); `read` reads a key's fields for the reply.
    pub fn search(&mut self, query: &SearchQuery, read: ContentReader, live: Live) -> Result<Found, String> {
        // INORDER without SLOP allows any distance (RediSearch: the largest slop).
        let near = match (query.slop, query.in_order) {
            (None, false) => None,
            (slop, in_order) => Some(Proximity { slop: slop.unwrap_or(i32::MAX as u32), in_order }),
        };
        let mode = Mode { verbatim: query.verbatim, language: query.language.unwrap_or(self.language), near };
        let filter = self.compile(&query.filter, mode)?;
        let mut counts = Vec::new();
        self.term_counts(&filter, &mut counts);
        let page_end = query.offset.saturating_add(query.num);
        let (total, mut hits) = match &query.knn {
            Some(knn) => {
                let (position, vector, default_ef) = self.query_vector(&knn.field, &knn.blob)?;
                let ef = knn.ef_runtime.unwrap_or(default_ef);
                let near = self.knn(position, &filter, &vector, knn.k, ef, live);
                let hits: Vec<Hit> = near
                    .into_iter()
                    .map(|(key, d)| Hit { key, score: Some(d), terms: Vec::new(), stats: DocStats::default(), sort: None, fields: None })
                    .collect();
                (hits.len(), hits)
            }
            None => {
                let passing = self.eval(&filter);
                let mut found: Vec<(Bytes, u32)> = ids(&passing)
                    .filter_map(|id| self.docs[id as usize].as_ref().map(|d| (d, id)))
                    .filter(|(d, _)| live.key(&d.key))
                    .map(|(d, id)| (d.key.clone(), id))
                    .collect();
                let total = found.len();
                // Without SORTBY the node orders by relevance score, then key. When every
                // match scores alike, only this shard's first `page_end` keys can make
                // the page; otherwise the node needs them all to rank them.
                let uniform = self.uniform(&query.filter);
                // In key order whatever the case: a shard's answer is then a function of
                // its documents, not of the order ids were handed out in (the
                // simulator's audit compares it with a rebuild's).
                found.sort_unstable();
                if query.sort_by.is_none() && uniform {
                    found.truncate(page_end);
                }
                let scored = query.with_scores || (query.sort_by.is_none() && !uniform);
                let distances = find_within(&filter);
                let hits = found
                    .into_iter()
                    .map(|(key, id)| {
                        let mut terms = Vec::new();
                        let mut stats = DocStats::default();
                        if scored {
                            self.terms(&filter, id, &mut terms);
                            stats = self.doc_stats(&filter, id);
                            if query.scorer == Scorer::Dismax {
                                stats.dismax = self.dismax(&filter, id);
                            }
                        }
                        Hit { key, score: distances.and_then(|d| d.get(&id).copied()), terms, stats, sort: None, fields: None }
                    })
                    .collect();
                (total, hits)
            }
        };
        if let Some(sort) = &query.sort_by {
            let is_score = query.distance_alias().is_some_and(|a| a.eq_ignore_ascii_case(&sort.field));
            if !is_score {
                let Some((i, def)) = self.def.field(&sort.field) else {
                    return Err(format!("Property `{}` not loaded nor in schema", String::from_utf8_lossy(&sort.field)));
                };
                for hit in &mut hits {
                    let doc = self.by_key.get(&hit.key).and_then(|&id| self.docs[id as usize].as_ref());
                    hit.sort = Some(match (&def.kind, doc) {
                        (FieldKind::Numeric, Some(d)) => d.numbers[self.positions[i]].map_or(SortValue::Missing, SortValue::Number),
                        (FieldKind::Tag { .. }, Some(d)) => {
                            d.tags[self.positions[i]].first().cloned().map_or(SortValue::Missing, SortValue::Text)
                        }
                        // The value as written: the index keeps terms, not values.
                        (FieldKind::Text { .. }, Some(_)) => read(&hit.key)
                            .and_then(|fields| fields.into_iter().find(|(name, _)| *name == def.path).map(|(_, value)| value))
                            .map_or(SortValue::Missing, |value| {
                                SortValue::Text(if def.sortable { Bytes::from(value.to_ascii_lowercase()) } else { value })
                            }),
                        _ => SortValue::Missing,
                    });
                }
            }
        }
        if !query.nocontent {
            // Without SORTBY (and with uniform scores) only the first `page_end` hits of
            // a shard can make the page.
            let wanted = if query.sort_by.is_some() || (query.knn.is_none() && !self.uniform(&query.filter)) {
                hits.len()
            } else {
                page_end.min(hits.len())
            };
            for hit in hits.iter_mut().take(wanted) {
                hit.fields = read(&hit.key);
            }
        }
        Ok(Found { total, hits, docs: self.live_docs, total_len: self.total_len, counts })
    }

    /// The `k` nearest documents passing `filter` by vector field `field`, with their
    /// distances, nearest first (ties by key, so every node orders them alike).
    fn knn(&mut self, field: usize, filter: &Compiled, query: &[f32], k: usize, ef: usize, live: Live) -> Vec<(Bytes, f32)> {
        let passing = match filter {
            Compiled::All => None,
            _ => Some(self.eval(filter)),
        };
        let docs = &self.docs;
        let (store, owners) = &mut self.stores[field];
        let doc_of = |slot: u32| docs[owners[slot as usize] as usize].as_ref();
        let passes = |slot: u32| passing.as_ref().is_none_or(|bits| has(bits, owners[slot as usize]));
        let near: Vec<Near> = if !store.is_graph() || store.live() == 0 {
            let accepted: Vec<u32> = (0..store.slots() as u32)
                .filter(|&s| !store.is_deleted(s) && passes(s) && doc_of(s).is_some_and(|d| live.key(&d.key)))
                .collect();
            store.search_exact(query, k, accepted.into_iter())
        } else {
            let slots: Option<Vec<u32>> = passing
                .as_ref()
                .map(|bits| ids(bits).filter_map(|id| docs[id as usize].as_ref().and_then(|d| d.slots[field].map(|(s, _)| s))).collect());
            match slots {
                Some(slots) if slots.len() <= EXACT_SCAN_DOCS_MAX || (slots.len() as f64) <= EXACT_SCAN_SHARE * store.live() as f64 => {
                    let slots: Vec<u32> = slots.into_iter().filter(|&s| doc_of(s).is_some_and(|d| live.key(&d.key))).collect();
                    store.search_exact(query, k, slots.into_iter())
                }
                _ => match live {
                    // The walk keeps only slots not deleted, and a slot is deleted
                    // whenever its document goes or its vector is replaced: every
                    // slot it keeps has a document.
                    Live::All => store.search_graph(query, k, ef, |slot| {
                        debug_assert!(doc_of(slot).is_some(), "slot {slot} kept without a document");
                        passes(slot)
                    }),
                    Live::Checked(_) => {
                        store.search_graph(query, k, ef, |slot| passes(slot) && doc_of(slot).is_some_and(|d| live.key(&d.key)))
                    }
                },
            }
        };
        let mut out: Vec<(Bytes, f32)> = near.into_iter().filter_map(|n| doc_of(n.1).map(|d| (d.key.clone(), n.0))).collect();
        out.sort_by(|a, b| a.1.total_cmp(&b.1).then_with(|| a.0.cmp(&b.0)));
        out
    }
}
