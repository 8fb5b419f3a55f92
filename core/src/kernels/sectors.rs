//! How much of a strided read's memory traffic is useful, when memory moves
//! in sectors (32 bytes on NVIDIA GPUs): a lane that needs 4 bytes pays for
//! the whole sector unless its neighbours share it.

/// NVIDIA's L1/L2 sector size in bytes.
pub const SECTOR_BYTES: u32 = 32;

/// The useful share of the bytes moved when consecutive lanes read
/// `elem_bytes` each, `stride` elements apart: max(1/stride, elem/sector).
pub fn useful_share(stride: u32, elem_bytes: u32, sector_bytes: u32) -> f64 {
    let gap = stride.max(1).saturating_mul(elem_bytes);
    if gap >= sector_bytes {
        f64::from(elem_bytes) / f64::from(sector_bytes)
    } else {
        1.0 / f64::from(stride.max(1))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The sectors a subgroup of `lanes` touches, counted address by address.
    fn counted(lanes: u32, stride: u32, elem: u32, sector: u32) -> f64 {
        let mut sectors: Vec<u32> = (0..lanes).map(|l| l * stride * elem / sector).collect();
        sectors.dedup();
        f64::from(lanes * elem) / f64::from(sectors.len() as u32 * sector)
    }

    #[test]
    fn the_share_is_the_sectors_counted_and_floors_at_one_eighth_for_floats() {
        for stride in 1..=64 {
            for lanes in [32, 64] {
                let want = counted(lanes, stride, 4, SECTOR_BYTES);
                let got = useful_share(stride, 4, SECTOR_BYTES);
                assert!(
                    (want - got).abs() < 1e-12,
                    "stride {stride}, {lanes} lanes: {want} vs {got}"
                );
            }
        }
        assert_eq!(useful_share(4, 4, 32), 0.25);
        assert_eq!(useful_share(16, 4, 32), 0.125);
        assert_eq!(
            useful_share(32, 4, 32),
            0.125,
            "more than 1/32: a sector, not a line"
        );
    }
}
