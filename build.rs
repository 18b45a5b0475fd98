//! Emits the linker settings a Node.js addon needs on every platform napi-rs supports.

fn main() {
    napi_build::setup();
}
