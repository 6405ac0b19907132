//! The arguments of one block run: parameters and arrays in binding order, checked against the
//! block before any tile is made.

use std::sync::Arc;

use xcd_wire::{Access, ArrayRole, BlockDesc, ParamKind};

use crate::RunError;

/// One array argument, borrowed from the program for the length of the run.
#[derive(Debug)]
pub(crate) enum ArrayArg<'a> {
    In(&'a [u8]),
    Out(&'a mut [u8]),
    InOut(&'a mut [u8]),
    Whole(Arc<[u8]>),
}

/// Parameters and arrays for a run, in the order the block declares them.
#[derive(Debug, Default)]
pub struct Args<'a> {
    pub(crate) params: Vec<(ParamKind, u32)>,
    pub(crate) arrays: Vec<ArrayArg<'a>>,
}

impl<'a> Args<'a> {
    /// No arguments yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds an unsigned integer parameter.
    pub fn u32(mut self, value: u32) -> Self {
        self.params.push((ParamKind::U32, value));
        self
    }

    /// Adds a signed integer parameter.
    pub fn i32(mut self, value: i32) -> Self {
        self.params.push((ParamKind::I32, value as u32));
        self
    }

    /// Adds a float parameter.
    pub fn f32(mut self, value: f32) -> Self {
        self.params.push((ParamKind::F32, value.to_bits()));
        self
    }

    /// Adds a per-item array the block reads.
    pub fn input<T: bytemuck::Pod>(mut self, data: &'a [T]) -> Self {
        self.arrays.push(ArrayArg::In(bytemuck::cast_slice(data)));
        self
    }

    /// Adds a per-item array the block writes; results land here in place.
    pub fn output<T: bytemuck::Pod>(mut self, data: &'a mut [T]) -> Self {
        self.arrays.push(ArrayArg::Out(bytemuck::cast_slice_mut(data)));
        self
    }

    /// Adds a per-item array the block reads and writes.
    pub fn inout<T: bytemuck::Pod>(mut self, data: &'a mut [T]) -> Self {
        self.arrays.push(ArrayArg::InOut(bytemuck::cast_slice_mut(data)));
        self
    }

    /// Adds a whole read-only array shared by every tile.
    pub fn whole<T: bytemuck::Pod>(mut self, data: &[T]) -> Self {
        self.arrays.push(ArrayArg::Whole(Arc::from(bytemuck::cast_slice::<T, u8>(data))));
        self
    }

    /// Checks the arguments against the block for a run of `n` items.
    pub(crate) fn check(&self, desc: &BlockDesc, n: u32) -> Result<(), RunError> {
        let bad = |msg: String| Err(RunError::Args { block: desc.name.clone(), msg });
        if self.params.len() != desc.params.len() {
            return bad(format!("it takes {} parameters, {} were given", desc.params.len(), self.params.len()));
        }
        for ((kind, _), spec) in self.params.iter().zip(&desc.params) {
            if *kind != spec.kind {
                return bad(format!("parameter {} is {:?}, a {:?} was given", spec.name, spec.kind, kind));
            }
        }
        if self.arrays.len() != desc.arrays.len() {
            return bad(format!("it binds {} arrays, {} were given", desc.arrays.len(), self.arrays.len()));
        }
        for (arg, spec) in self.arrays.iter().zip(&desc.arrays) {
            let want = u64::from(n) * u64::from(spec.elem_size);
            let (ok_role, len) = match (arg, spec.role) {
                (ArrayArg::In(d), ArrayRole::PerItem(Access::In)) => (true, d.len()),
                (ArrayArg::Out(d), ArrayRole::PerItem(Access::Out)) => (true, d.len()),
                (ArrayArg::InOut(d), ArrayRole::PerItem(Access::InOut)) => (true, d.len()),
                (ArrayArg::Whole(d), ArrayRole::Whole) => {
                    if d.is_empty() || d.len() % spec.elem_size as usize != 0 {
                        return bad(format!(
                            "whole array {} needs whole elements of {} bytes, and at least one",
                            spec.name, spec.elem_size
                        ));
                    }
                    continue;
                }
                _ => (false, 0),
            };
            if !ok_role {
                return bad(format!("array {} is {:?}; pass it with the matching Args method", spec.name, spec.role));
            }
            if len as u64 != want {
                return bad(format!("array {} needs {want} bytes for {n} items, it has {len}", spec.name));
            }
        }
        Ok(())
    }
}
