//! What an informer's sync costs per watch line, stage by stage, on lines given in a file
//! (one `{"type":"ADDED","object":…}` per line, e.g. the fleet benchmark's objects):
//! `cargo run --release --example sync_cost -- <file.ndjson>`. The stages are those of
//! `informer::reflector::lines::step`: the line's parse, `strip` (of managedFields and the last-applied
//! annotation), the object's header and copy, and packing its text (`compress`); then what
//! unpacking a packed text costs each read of it. Medians of 7 rounds, in one process.

mod common;

use std::time::Instant;

use common::{fleet_strip, median};
use kube_watch_native::engine::wire::WatchLine;
use kube_watch_native::informer::store::Object;

fn main() {
    let file = std::env::args()
        .nth(1)
        .expect("usage: sync_cost <file.ndjson>");
    let text = std::fs::read(&file).expect("the lines' file");
    let lines: Vec<&[u8]> = text
        .split(|b| *b == b'\n')
        .filter(|l| !l.is_empty())
        .collect();
    let bytes: usize = lines.iter().map(|l| l.len()).sum();
    let strip = fleet_strip();
    let objects = |line| match WatchLine::parse(line).unwrap() {
        WatchLine::Change { object, .. } => object,
        _ => panic!("a change"),
    };
    let mut stages: [(&str, Vec<f64>); 7] = [
        ("line parse (WatchLine::parse)", vec![]),
        ("strip, validating (apply_object)", vec![]),
        ("strip (apply_raw)", vec![]),
        ("object header + copy, stripped", vec![]),
        ("object header + copy, whole", vec![]),
        ("pack, whole (Object::packed)", vec![]),
        ("unpack, whole (Object::write_text)", vec![]),
    ];
    let whole: Vec<Object> = lines
        .iter()
        .map(|l| Object::parse(objects(l).get().as_bytes()).unwrap())
        .collect();
    let packed: Vec<Object> = whole.iter().map(|o| o.clone().pack_if(true)).collect();
    let mut unpacked = Vec::new();
    let stripped: Vec<Vec<u8>> = lines
        .iter()
        .map(|l| strip.apply_raw(objects(l)).unwrap())
        .collect();
    let mut kept = 0;
    for _ in 0..7 {
        let mut time = |stage: usize, f: &mut dyn FnMut() -> usize| {
            let start = Instant::now();
            kept += f();
            stages[stage]
                .1
                .push(start.elapsed().as_secs_f64() * 1e9 / lines.len() as f64);
        };
        time(0, &mut || {
            lines.iter().map(|l| objects(l).get().len()).sum()
        });
        time(1, &mut || {
            lines
                .iter()
                .map(|l| {
                    strip
                        .apply_object(objects(l).get().as_bytes())
                        .unwrap()
                        .len()
                })
                .sum()
        });
        time(2, &mut || {
            lines
                .iter()
                .map(|l| strip.apply_raw(objects(l)).unwrap().len())
                .sum()
        });
        time(3, &mut || {
            stripped
                .iter()
                .map(|s| Object::parse(s).unwrap().text().len())
                .sum()
        });
        time(4, &mut || {
            lines
                .iter()
                .map(|l| {
                    Object::parse(objects(l).get().as_bytes())
                        .unwrap()
                        .text()
                        .len()
                })
                .sum()
        });
        time(5, &mut || {
            whole
                .iter()
                .map(|o| o.packed().map_or(0, |p| p.stored_text_bytes()))
                .sum()
        });
        time(6, &mut || {
            packed
                .iter()
                .map(|o| {
                    unpacked.clear();
                    o.write_text(&mut unpacked);
                    unpacked.len()
                })
                .sum()
        });
    }
    let held: usize = packed.iter().map(Object::stored_text_bytes).sum();
    let json: usize = packed.iter().map(Object::text_len).sum();
    println!(
        "{} lines of {} bytes on average ({kept} bytes kept in all); packed, the objects' {json} bytes of JSON take {held} ({:.2}×)",
        lines.len(),
        bytes / lines.len(),
        held as f64 / json as f64
    );
    let line_parse = median(stages[0].1.clone());
    for (i, (name, xs)) in stages.into_iter().enumerate() {
        let m = median(xs);
        // Stages 1, 2 and 4 include the line's parse (their input); the others do not.
        let own = if matches!(i, 1 | 2 | 4) {
            m - line_parse
        } else {
            m
        };
        println!(
            "{name:36} {own:7.0} ns per line ({:.2} ns per line byte)",
            own * lines.len() as f64 / bytes as f64
        );
    }
}
