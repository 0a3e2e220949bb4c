//! docs/schema.md parsed into its `## Path:` tables, and a result JSON
//! checked against them (used by tests/schema.rs and tests/kernel_lab.rs).

use std::collections::HashMap;

use serde_json::Value;

pub struct Field {
    #[allow(dead_code)]
    pub types: Vec<String>,
    pub required: bool,
}

/// Path → (field → spec), from the `## Path: /x` tables of docs/schema.md.
pub fn documented() -> HashMap<String, HashMap<String, Field>> {
    let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/schema.md")).unwrap();
    let mut out: HashMap<String, HashMap<String, Field>> = HashMap::new();
    let mut current: Option<String> = None;
    for line in doc.lines() {
        if let Some(p) = line.strip_prefix("## Path: ") {
            current = Some(p.trim().to_string());
            out.entry(p.trim().to_string()).or_default();
            continue;
        }
        if line.starts_with("## ") {
            current = None;
            continue;
        }
        let Some(path) = &current else { continue };
        let cells: Vec<&str> = line.split('|').map(|c| c.trim()).collect();
        if cells.len() < 5 || !cells[1].starts_with('`') {
            continue;
        }
        let name = cells[1].trim_matches('`').to_string();
        let types = cells[2].split(" or ").map(|t| t.trim().to_string()).collect();
        out.get_mut(path).unwrap().insert(name, Field { types, required: cells[3] == "yes" });
    }
    out
}

pub fn type_ok(v: &Value, t: &str) -> bool {
    match t {
        "string" => v.is_string(),
        "integer" => v.is_u64() || v.is_i64(),
        "number" => v.is_number(),
        "boolean" => v.is_boolean(),
        "array" => v.is_array(),
        "object" | "map" => v.is_object(),
        "null" => v.is_null(),
        other => panic!("docs/schema.md uses unknown type '{other}'"),
    }
}

pub fn check(doc: &HashMap<String, HashMap<String, Field>>, path: &str, v: &Value, errors: &mut Vec<String>) {
    match v {
        Value::Object(map) => {
            let Some(fields) = doc.get(path) else {
                errors.push(format!("{path}: object not documented (add a '## Path: {path}' table)"));
                return;
            };
            for (k, f) in fields {
                if f.required && !map.contains_key(k) {
                    errors.push(format!("{path}: required field `{k}` missing"));
                }
            }
            for (k, val) in map {
                let Some(f) = fields.get(k) else {
                    errors.push(format!("{path}: field `{k}` is not documented"));
                    continue;
                };
                if !f.types.iter().any(|t| type_ok(val, t)) {
                    errors.push(format!("{path}: `{k}` = {val} is not {:?}", f.types));
                }
                if f.types.iter().any(|t| t == "map") {
                    continue; // free keys, documented in prose
                }
                let sub = if path == "/" { format!("/{k}") } else { format!("{path}/{k}") };
                check(doc, &sub, val, errors);
            }
        }
        Value::Array(items) => {
            for item in items.iter().filter(|i| i.is_object() || i.is_array()) {
                check(doc, &format!("{path}[]"), item, errors);
            }
        }
        _ => {}
    }
}
