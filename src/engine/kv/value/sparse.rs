//! [`Sparse`]: how a key state keeps a field that most states leave empty off the
//! state itself. Owns only that storage rule; what the fields mean is `value.rs`'s.

use super::KeyMeta;
use crate::crdt::counter::Counter;

/// A field most key and element states leave empty ([`KeyMeta`]: the explicit causal
/// context and the TTL register; INCRBYFLOAT's counter): kept off
/// the state, 8 bytes inline, until it holds something. Reads see an empty value when
/// none is held; writes go through [`Sparse::set`] and [`Sparse::update`], which drop
/// the box again when the value becomes empty, so equal states compare equal.
#[derive(Clone, Debug, Default)]
pub(super) struct Sparse<T: SparseValue>(Option<Box<T>>);

pub(super) trait SparseValue: Default + PartialEq + Sized + 'static {
    fn empty() -> &'static Self;
    fn is_empty_value(&self) -> bool;
}

static NO_META: std::sync::LazyLock<KeyMeta> = std::sync::LazyLock::new(KeyMeta::default);
static NO_FLOATS: std::sync::LazyLock<Counter<f64>> = std::sync::LazyLock::new(Counter::default);

impl SparseValue for Counter<f64> {
    fn empty() -> &'static Self {
        &NO_FLOATS
    }
    fn is_empty_value(&self) -> bool {
        self.is_empty()
    }
}

impl SparseValue for KeyMeta {
    fn empty() -> &'static Self {
        &NO_META
    }
    fn is_empty_value(&self) -> bool {
        self.is_empty()
    }
}

impl<T: SparseValue> std::ops::Deref for Sparse<T> {
    type Target = T;
    fn deref(&self) -> &T {
        match self.0.as_deref() {
            Some(value) => value,
            None => T::empty(),
        }
    }
}

impl<T: SparseValue> PartialEq for Sparse<T> {
    fn eq(&self, other: &Self) -> bool {
        **self == **other
    }
}

impl<T: SparseValue> From<T> for Sparse<T> {
    fn from(value: T) -> Self {
        Sparse((!value.is_empty_value()).then(|| Box::new(value)))
    }
}

impl<T: SparseValue> Sparse<T> {
    /// A value already boxed (a compact form's, see `repr.rs`), which must not be empty.
    pub(super) fn from_box(value: Box<T>) -> Self {
        debug_assert!(!value.is_empty_value());
        Sparse(Some(value))
    }

    /// The box, if a value is held, leaving none.
    pub(super) fn take_box(&mut self) -> Option<Box<T>> {
        self.0.take()
    }

    pub(super) fn set(&mut self, value: T) {
        *self = Sparse::from(value);
    }

    pub(super) fn update(&mut self, f: impl FnOnce(&mut T)) {
        match self.0.as_deref_mut() {
            Some(value) => {
                f(value);
                if value.is_empty_value() {
                    self.0 = None;
                }
            }
            None => {
                let mut value = T::default();
                f(&mut value);
                self.set(value);
            }
        }
    }
}
