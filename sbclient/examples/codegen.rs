//! Regenerates `src/generated/*.rs` from the schemas in `schemas/`.
//!
//! Run: `cargo run -p sbclient --example codegen` (add `--no-default-features`
//! if the checked-in output no longer compiles against the library).

use std::path::Path;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    for (schema, module) in sbclient::codegen::SCHEMAS {
        let text = std::fs::read_to_string(root.join("schemas").join(schema))?;
        let parsed = sbclient::schema::DatabaseSchema::parse(&text)?;
        let code = sbclient::codegen::generate(&parsed, &format!("schemas/{schema}"))?;
        let out = root.join("src/generated").join(format!("{module}.rs"));
        std::fs::write(&out, code)?;
        println!("wrote {}", out.display());
    }
    Ok(())
}
