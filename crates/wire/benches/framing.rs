//! Framer throughput on 1-byte, 4 KiB and 1 MiB chunkings.
//!
//! Run: `cargo bench -p switchboard-wire --bench framing`

use criterion::{BenchmarkId, Criterion, Throughput, criterion_main};
use switchboard_wire::LineFramer;

fn stream(total: usize) -> Vec<u8> {
    let line = br#"{"jsonrpc":"2.0","id":12345,"result":{"content":[{"type":"text","text":"the quick brown fox jumps over the lazy dog"}],"resultType":"complete"}}"#;
    let mut out = Vec::with_capacity(total + line.len() + 1);
    while out.len() < total {
        out.extend_from_slice(line);
        out.push(b'\n');
    }
    out
}

pub(crate) fn framing(c: &mut Criterion) {
    let mut group = c.benchmark_group("framer");
    for (label, chunk, total) in [
        ("1B", 1usize, 256 * 1024),
        ("4KiB", 4096, 16 << 20),
        ("1MiB", 1 << 20, 16 << 20),
    ] {
        let data = stream(total);
        group.throughput(Throughput::Bytes(data.len() as u64));
        group.bench_with_input(BenchmarkId::from_parameter(label), &data, |b, data| {
            b.iter(|| {
                let mut framer = LineFramer::new();
                let mut lines = 0usize;
                for piece in data.chunks(chunk) {
                    framer.push(piece);
                    while let Ok(Some(line)) = framer.next_line() {
                        lines += line.len();
                    }
                }
                lines
            })
        });
    }
    group.finish();
}

// criterion_group! generates an undocumented function.
#[allow(missing_docs)]
mod group {
    criterion::criterion_group!(benches, super::framing);
}
use group::benches;
criterion_main!(benches);
