//! The checked-in generated rows match what the generator makes from the
//! checked-in schemas, and the checked-in schemas match the installed ones.

use std::path::Path;

use sbclient::codegen::{generate, LATER_SB_COLUMNS, SCHEMAS};
use sbclient::schema::DatabaseSchema;

#[test]
fn generated_code_matches_schemas() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    for (schema, module) in SCHEMAS {
        let text = std::fs::read_to_string(root.join("schemas").join(schema)).unwrap();
        let parsed = DatabaseSchema::parse(&text).unwrap();
        let fresh = generate(&parsed, &format!("schemas/{schema}")).unwrap();
        let path = root.join("src/generated").join(format!("{module}.rs"));
        let checked_in = std::fs::read_to_string(&path).unwrap();
        assert!(
            fresh == checked_in,
            "{} is stale: run `cargo run -p sbclient --example codegen`",
            path.display()
        );
    }
}

#[test]
fn checked_in_schemas_match_installed() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    for (schema, installed) in [
        ("ovn-sb.ovsschema", "/usr/share/ovn/ovn-sb.ovsschema"),
        (
            "vswitch.ovsschema",
            "/usr/share/openvswitch/vswitch.ovsschema",
        ),
    ] {
        let Ok(installed_text) = std::fs::read_to_string(installed) else {
            eprintln!("skipping: {installed} not installed");
            continue;
        };
        let ours = std::fs::read_to_string(root.join("schemas").join(schema)).unwrap();
        let mut ours = DatabaseSchema::parse(&ours).unwrap();
        if schema == "ovn-sb.ovsschema" {
            // Less what later releases added (and the agent reads where the server has it).
            for (table, column) in LATER_SB_COLUMNS {
                let t = ours.tables.get_mut(*table).expect("a table of the schema");
                assert!(t.columns.remove(*column).is_some(), "{table}.{column}");
            }
        }
        let theirs = DatabaseSchema::parse(&installed_text).unwrap();
        assert_eq!(ours, theirs, "{schema} differs from {installed}");
    }
}
