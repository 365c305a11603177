//! Emulated global memory: a set of separate allocations at device-like addresses.
//!
//! Each allocation starts on a 256-byte boundary (as `cudaMalloc` guarantees) and is followed by
//! at least 256 unmapped bytes, so an access that runs past one allocation faults instead of
//! landing silently in the next. Address 0 is never allocated. Every access, by a kernel or by
//! the host-side helpers, must lie entirely inside one allocation.

use super::error::{EmulatorError, EmulatorErrorKind};

/// Where the first allocation is placed (the range CUDA typically hands out on 64-bit Linux).
const FIRST_ADDRESS: u64 = 0x7f00_0000_0000;
/// Alignment of every allocation, and the minimum unmapped gap after each.
const ALIGNMENT: u64 = 256;

/// Emulated device global memory: allocations the kernel may load from and store to.
///
/// ```
/// use stencil_cuda::emulator::Memory;
/// let mut memory = Memory::new();
/// let address = memory.alloc(3 * 8);
/// memory.write_f64s(address, &[1.0, 2.0, 3.0]).unwrap();
/// assert_eq!(memory.read_f64s(address + 8, 2).unwrap(), [2.0, 3.0]);
/// assert!(memory.read(address + 24, 1).is_err()); // one past the end
/// ```
#[derive(Clone, Debug, Default)]
pub struct Memory {
    /// Sorted by base address.
    allocations: Vec<Allocation>,
    next_address: u64,
}

#[derive(Clone, Debug)]
struct Allocation {
    base: u64,
    bytes: Vec<u8>,
}

impl Memory {
    /// Empty memory with no allocations.
    pub fn new() -> Memory {
        Memory {
            allocations: Vec::new(),
            next_address: FIRST_ADDRESS,
        }
    }

    /// Allocates `bytes` zeroed bytes and returns their address: 256-byte aligned, never 0, not
    /// overlapping any other allocation (a zero-byte allocation gets a unique address that no
    /// access may touch).
    pub fn alloc(&mut self, bytes: usize) -> u64 {
        let base = self.next_address.max(FIRST_ADDRESS);
        let end = base + bytes as u64;
        self.next_address = (end + ALIGNMENT).div_ceil(ALIGNMENT) * ALIGNMENT;
        self.allocations.push(Allocation {
            base,
            bytes: vec![0; bytes],
        });
        base
    }

    /// Allocates room for `values` and copies them in; returns the address.
    pub fn alloc_f64s(&mut self, values: &[f64]) -> u64 {
        let address = self.alloc(values.len() * 8);
        self.write_f64s(address, values)
            .expect("a fresh allocation holds its own values");
        address
    }

    /// Allocates room for `values` and copies them in; returns the address.
    pub fn alloc_f32s(&mut self, values: &[f32]) -> u64 {
        let address = self.alloc(values.len() * 4);
        self.write_f32s(address, values)
            .expect("a fresh allocation holds its own values");
        address
    }

    /// Releases the allocation starting at `address`; later accesses to it fault.
    pub fn free(&mut self, address: u64) -> Result<(), EmulatorError> {
        match self.allocations.iter().position(|a| a.base == address) {
            Some(index) => {
                self.allocations.remove(index);
                Ok(())
            }
            None => Err(EmulatorError::new(
                EmulatorErrorKind::OutOfBounds,
                format!("free of {address:#x}, which is not the start of an allocation"),
            )),
        }
    }

    /// Copies `bytes` to `address`.
    pub fn write(&mut self, address: u64, bytes: &[u8]) -> Result<(), EmulatorError> {
        let range = self.host_range(address, bytes.len(), "write")?;
        let (index, start) = range;
        self.allocations[index].bytes[start..start + bytes.len()].copy_from_slice(bytes);
        Ok(())
    }

    /// Reads `len` bytes at `address`.
    pub fn read(&self, address: u64, len: usize) -> Result<Vec<u8>, EmulatorError> {
        let mut bytes = vec![0; len];
        self.read_into(address, &mut bytes)?;
        Ok(bytes)
    }

    /// Reads `out.len()` bytes at `address` into `out`.
    pub fn read_into(&self, address: u64, out: &mut [u8]) -> Result<(), EmulatorError> {
        let (index, start) = self.host_range(address, out.len(), "read")?;
        out.copy_from_slice(&self.allocations[index].bytes[start..start + out.len()]);
        Ok(())
    }

    /// Writes `values` (little-endian, as on the device) at `address`.
    pub fn write_f64s(&mut self, address: u64, values: &[f64]) -> Result<(), EmulatorError> {
        let bytes: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
        self.write(address, &bytes)
    }

    /// Reads `count` f64 values at `address`.
    pub fn read_f64s(&self, address: u64, count: usize) -> Result<Vec<f64>, EmulatorError> {
        let bytes = self.read(address, count * 8)?;
        Ok(bytes
            .chunks_exact(8)
            .map(|chunk| f64::from_le_bytes(chunk.try_into().expect("8-byte chunk")))
            .collect())
    }

    /// Writes `values` (little-endian, as on the device) at `address`.
    pub fn write_f32s(&mut self, address: u64, values: &[f32]) -> Result<(), EmulatorError> {
        let bytes: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
        self.write(address, &bytes)
    }

    /// Reads `count` f32 values at `address`.
    pub fn read_f32s(&self, address: u64, count: usize) -> Result<Vec<f32>, EmulatorError> {
        let bytes = self.read(address, count * 4)?;
        Ok(bytes
            .chunks_exact(4)
            .map(|chunk| f32::from_le_bytes(chunk.try_into().expect("4-byte chunk")))
            .collect())
    }

    fn host_range(
        &self,
        address: u64,
        len: usize,
        what: &str,
    ) -> Result<(usize, usize), EmulatorError> {
        self.locate(address, len as u64).ok_or_else(|| {
            EmulatorError::new(
                EmulatorErrorKind::OutOfBounds,
                format!(
                    "host {what} of {len} bytes at {address:#x}: {}",
                    self.describe(address)
                ),
            )
        })
    }

    /// The allocation index and offset of `[address, address + len)`, if one allocation holds
    /// it all.
    fn locate(&self, address: u64, len: u64) -> Option<(usize, usize)> {
        let index = self
            .allocations
            .partition_point(|a| a.base <= address)
            .checked_sub(1)?;
        let allocation = &self.allocations[index];
        let offset = address - allocation.base;
        let end = offset.checked_add(len)?;
        (end <= allocation.bytes.len() as u64).then_some((index, offset as usize))
    }

    /// A kernel load of `size` (4 or 8) bytes, little-endian, or `None` when out of bounds.
    pub(crate) fn load(&self, address: u64, size: u8) -> Option<u64> {
        let (index, offset) = self.locate(address, u64::from(size))?;
        let bytes = &self.allocations[index].bytes[offset..offset + usize::from(size)];
        Some(read_le(bytes))
    }

    /// A kernel store of the low `size` bytes of `bits`; `false` when out of bounds.
    pub(crate) fn store(&mut self, address: u64, size: u8, bits: u64) -> bool {
        let Some((index, offset)) = self.locate(address, u64::from(size)) else {
            return false;
        };
        let size = usize::from(size);
        self.allocations[index].bytes[offset..offset + size]
            .copy_from_slice(&bits.to_le_bytes()[..size]);
        true
    }

    /// Which allocation is nearest to `address`, for error messages.
    pub(crate) fn describe(&self, address: u64) -> String {
        let nearest = self.allocations.iter().min_by_key(|a| {
            let end = a.base + a.bytes.len() as u64;
            if address < a.base {
                a.base - address
            } else {
                address.saturating_sub(end)
            }
        });
        match nearest {
            Some(a) => format!(
                "outside every allocation (nearest: {:#x}..{:#x}, {} bytes)",
                a.base,
                a.base + a.bytes.len() as u64,
                a.bytes.len()
            ),
            None => "outside every allocation (none exist)".to_string(),
        }
    }
}

/// Little-endian value of up to 8 bytes.
pub(crate) fn read_le(bytes: &[u8]) -> u64 {
    let mut buffer = [0u8; 8];
    buffer[..bytes.len()].copy_from_slice(bytes);
    u64::from_le_bytes(buffer)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn allocations_are_aligned_disjoint_and_guarded() {
        let mut memory = Memory::new();
        let first = memory.alloc(100);
        let empty = memory.alloc(0);
        let second = memory.alloc(8);
        for address in [first, empty, second] {
            assert_ne!(address, 0);
            assert_eq!(address % 256, 0);
        }
        assert!(empty >= first + 100 + 256);
        assert!(second > empty);
        assert!(memory.read(first + 99, 1).is_ok());
        assert!(memory.read(first + 100, 1).is_err());
        assert!(memory.read(first + 96, 8).is_err()); // straddles the end
        assert!(memory.read(empty, 1).is_err());
        assert!(memory.read(first - 1, 1).is_err());
    }

    #[test]
    fn typed_helpers_round_trip_little_endian() {
        let mut memory = Memory::new();
        let address = memory.alloc_f32s(&[1.5, -2.25]);
        assert_eq!(memory.read(address, 4).unwrap(), 1.5f32.to_le_bytes());
        assert_eq!(
            memory.load(address + 4, 4),
            Some(u64::from((-2.25f32).to_bits()))
        );
        assert!(memory.store(address, 4, u64::from(7.0f32.to_bits())));
        assert_eq!(memory.read_f32s(address, 2).unwrap(), [7.0, -2.25]);
        let doubles = memory.alloc_f64s(&[0.1, 0.2]);
        let mut raw = [0u8; 8];
        memory.read_into(doubles + 8, &mut raw).unwrap();
        assert_eq!(f64::from_le_bytes(raw), 0.2);
        memory.free(doubles).unwrap();
        assert!(memory.read(doubles, 8).is_err());
        assert_eq!(
            memory.write_f64s(address, &[1.0, 2.0]).unwrap_err().kind(),
            EmulatorErrorKind::OutOfBounds
        );
    }
}
