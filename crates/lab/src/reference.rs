//! The config files as their parsers see them: a JSON schema per file
//! (derived from the structs that parse it, with their doc comments), and
//! the reference table of every field generated from it, so that
//! docs/reference cannot miss a field (tests/docs.rs compares).

use serde_json::Value;

/// The files with a schema, by the name `rodlab schema` takes. `markers`
/// and `camera` are the tracker's: their schemas and checks are
/// `lab_devices::reference`'s (this crate does not link the tracker).
pub const FILES: [&str; 10] = ["rod", "rig", "scene", "loads", "identified", "session", "map", "markers", "camera", "cameras"];

/// The files of [`FILES`] that the tracker parses (the device build reads
/// them: `rodlab schema markers` loads it).
pub const TRACKER_FILES: [&str; 3] = ["markers", "camera", "cameras"];

/// Reads `path` as a file of kind `name` (one of [`FILES`]) with the very
/// parser the commands use, checking every value; what the file is, or the
/// error that names the file and the field. A loads file is checked for as
/// many cables as it lists; a session file is a session directory's.
pub fn check_file(name: &str, path: &std::path::Path) -> crate::Result<String> {
    use crate::error::Error;
    let what = match name {
        "rod" => {
            let r = rod::Rod::from_file(path)?;
            format!("a rod file: {} m, {} sections, {} cables, {} markers", r.length_m, r.section_lengths_m.len(), r.cables.len(), r.markers.len())
        }
        "rig" => {
            let (r, _) = session::Rig::from_file(path)?;
            format!("a rig file: {} devices", r.robots.len() + r.cameras.len() + r.ft300s.len() + r.ascii_sensors.len() + r.netfts.len())
        }
        "scene" => {
            let s = sim::Scene::from_file(path)?;
            format!("a scene file: {} s in steps of {} s", s.duration_s, s.step_s)
        }
        "loads" => {
            let (file, _): (identify::sessions::LoadsFile, String) = session::read_toml(path, "loads file")?;
            file.validate(file.cables.len()).map_err(|e| Error::input(format!("{}: {e}", path.display())))?;
            "a loads file".to_string()
        }
        "identified" => {
            identify::output::IdentifiedFile::read(path)?;
            "an identified file".to_string()
        }
        "session" => {
            let dir = path.parent().unwrap_or(path);
            session::SessionMeta::read(dir)?.ok_or_else(|| Error::input(format!("{}: no session.toml", dir.display())))?;
            "a session file".to_string()
        }
        "map" => {
            // Marker numbers are checked against a rod file on import.
            let m = crate::c3d::MocapMap::read(path, usize::MAX)?;
            format!("a motion-capture map: {} markers", m.markers.len())
        }
        "markers" | "camera" | "cameras" => {
            return Err(Error::input(format!("{name}: the tracker's file, checked by the device build (lab_devices::reference)")))
        }
        other => return Err(Error::input(format!("{other}: no such file kind (one of {})", FILES.join(", ")))),
    };
    Ok(what)
}

/// The experiments CSV pair's column tables (docs/reference/experiments.md):
/// `inputs.csv`'s, then `measurements.csv`'s, as Markdown.
pub fn experiment_columns() -> (String, String) {
    let mut inputs = "| column | required | meaning |\n|---|---|---|\n".to_string();
    for (name, required, meaning) in identify::data::INPUT_COLUMNS.iter() {
        inputs += &format!("| `{name}` | {} | {meaning} |\n", if *required { "yes" } else { "" });
    }
    let mut measurements = "| column | meaning |\n|---|---|\n".to_string();
    for (name, meaning) in identify::data::MEASUREMENT_COLUMNS {
        measurements += &format!("| `{name}` | {meaning} |\n");
    }
    (inputs, measurements)
}

/// The JSON schema of config file `name` (one of [`FILES`]).
pub fn schema(name: &str) -> Option<schemars::Schema> {
    finish_schema(raw_schema(name)?)
}

/// A derived schema as `rodlab schema` prints it (units unescaped).
pub fn finish_schema(raw: schemars::Schema) -> Option<schemars::Schema> {
    let mut value = raw.to_value();
    unescape_descriptions(&mut value);
    schemars::Schema::try_from(value).ok()
}

/// rustdoc's escaped brackets (`\[m\]`, units) as a reader writes them.
fn unescape_descriptions(v: &mut Value) {
    match v {
        Value::Object(map) => {
            for (k, x) in map.iter_mut() {
                match x {
                    Value::String(d) if k == "description" => *d = d.replace("\\[", "[").replace("\\]", "]"),
                    _ => unescape_descriptions(x),
                }
            }
        }
        Value::Array(a) => a.iter_mut().for_each(unescape_descriptions),
        _ => {}
    }
}

fn raw_schema(name: &str) -> Option<schemars::Schema> {
    Some(match name {
        "rod" => rod::config::file_schema(),
        "rig" => schemars::schema_for!(session::Rig),
        "scene" => sim::scene::file_schema(),
        "loads" => schemars::schema_for!(identify::sessions::LoadsFile),
        "identified" => schemars::schema_for!(identify::output::IdentifiedFile),
        "session" => schemars::schema_for!(session::SessionMeta),
        "map" => schemars::schema_for!(crate::c3d::RawMap),
        _ => return None,
    })
}

/// One field of a file, as the reference lists it.
#[derive(Clone, Debug, PartialEq)]
pub struct Field {
    /// Dotted path; `[]` marks an array of tables (`marker[].arc_m` is
    /// `arc_m` of each `[[marker]]`).
    pub path: String,
    pub kind: String,
    pub required: bool,
    pub default: Option<String>,
    pub description: String,
}

fn resolve<'a>(root: &'a Value, v: &'a Value) -> &'a Value {
    match v.get("$ref").and_then(Value::as_str).and_then(|r| r.strip_prefix("#/$defs/")) {
        Some(name) => root.get("$defs").and_then(|d| d.get(name)).map_or(v, |d| resolve(root, d)),
        None => v,
    }
}

/// The alternatives of a value: anyOf/oneOf branches, else itself.
fn alternatives<'a>(root: &'a Value, v: &'a Value) -> Vec<&'a Value> {
    let v = resolve(root, v);
    match v.get("anyOf").or_else(|| v.get("oneOf")).and_then(Value::as_array) {
        Some(a) => a.iter().flat_map(|x| alternatives(root, x)).collect(),
        None => vec![v],
    }
}

fn is_table(v: &Value) -> bool {
    v.get("properties").is_some()
}

fn kind_of(root: &Value, v: &Value) -> String {
    let kinds: Vec<String> = alternatives(root, v)
        .into_iter()
        .filter(|a| a.get("type").and_then(Value::as_str) != Some("null"))
        .map(|a| {
            if is_table(a) {
                return "table".to_string();
            }
            if let Some(e) = a.get("enum").and_then(Value::as_array) {
                return e.iter().map(|x| x.to_string()).collect::<Vec<_>>().join(" | ");
            }
            if let Some(c) = a.get("const") {
                return c.to_string();
            }
            let ty = match a.get("type") {
                Some(Value::String(t)) => t.clone(),
                Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).filter(|t| *t != "null").collect::<Vec<_>>().join(" or "),
                _ => "any".to_string(),
            };
            if ty == "array" {
                let items = a.get("items").map(|i| kind_of(root, i)).unwrap_or_else(|| "any".into());
                return match (a.get("minItems").and_then(Value::as_u64), a.get("maxItems").and_then(Value::as_u64)) {
                    (Some(n), Some(m)) if n == m => format!("[{items}; {n}]"),
                    _ if items == "table" => "array of tables".to_string(),
                    _ => format!("[{items}]"),
                };
            }
            ty
        })
        .collect();
    let mut unique: Vec<String> = vec![];
    for k in kinds {
        if !unique.contains(&k) {
            unique.push(k);
        }
    }
    unique.join(" or ")
}

/// The tables a value holds (a table, an array of tables, or either
/// among alternatives), with the path suffix (`[]` for arrays).
fn nested<'a>(root: &'a Value, v: &'a Value) -> Vec<(&'a Value, &'static str)> {
    let mut out = vec![];
    for a in alternatives(root, v) {
        if is_table(a) {
            out.push((a, ""));
        } else if let Some(items) = a.get("items") {
            for i in alternatives(root, items) {
                if is_table(i) {
                    out.push((i, "[]"));
                }
            }
        }
    }
    out
}

/// The type name a value refers to (`$ref`), directly or through an
/// Option or array.
fn ref_name(v: &Value) -> Option<String> {
    let direct = |x: &Value| x.get("$ref").and_then(Value::as_str).map(|r| r.trim_start_matches("#/$defs/").to_string());
    direct(v)
        .or_else(|| {
            let alts = v.get("anyOf").or_else(|| v.get("oneOf")).and_then(Value::as_array)?;
            alts.iter().find_map(|a| direct(a).or_else(|| a.get("items").and_then(ref_name)))
        })
        .or_else(|| v.get("items").and_then(direct))
}

/// `prefix.name`, or `name` at the top.
fn field_path(prefix: &str, name: &str) -> String {
    if prefix.is_empty() {
        name.to_string()
    } else {
        format!("{prefix}.{name}")
    }
}

fn walk(root: &Value, table: &Value, prefix: &str, out: &mut Vec<Field>, homes: &[(String, String)]) {
    let required: Vec<&str> = table.get("required").and_then(Value::as_array).map(|r| r.iter().filter_map(Value::as_str).collect()).unwrap_or_default();
    let Some(props) = table.get("properties").and_then(Value::as_object) else { return };
    for (name, sub) in props {
        let path = field_path(prefix, name);
        // An untagged union's alternatives may share a field: listed once.
        if out.iter().any(|f| f.path == path) {
            continue;
        }
        // A field's own doc, else its type's.
        let description = sub
            .get("description")
            .or_else(|| resolve(root, sub).get("description"))
            .and_then(Value::as_str)
            .unwrap_or("")
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ");
        // A type listed once, at its shallowest place: its other places say where.
        let reference = ref_name(sub);
        let seen = reference.as_ref().and_then(|r| homes.iter().find(|(n, _)| n == r)).map(|(_, p)| p.clone()).filter(|p| *p != path);
        let mut kind = kind_of(root, sub);
        if let Some(p) = &seen {
            kind = format!("{kind} (fields as `{p}`)");
        }
        out.push(Field {
            path: path.clone(),
            kind,
            required: required.contains(&name.as_str()),
            // A table's default is its fields' (listed below it).
            default: sub.get("default").filter(|d| !d.is_null() && !d.is_object()).map(|d| d.to_string()),
            description,
        });
        if seen.is_some() {
            continue;
        }
        for (t, suffix) in nested(root, sub) {
            walk(root, t, &format!("{path}{suffix}"), out, homes);
        }
    }
}

/// Where each referenced type is listed: its shallowest path (breadth
/// first; ties by name).
fn homes(root: &Value) -> Vec<(String, String)> {
    let mut homes: Vec<(String, String)> = vec![];
    let mut queue: std::collections::VecDeque<(&Value, String)> = nested(root, root).into_iter().map(|(t, _)| (t, String::new())).collect();
    while let Some((table, prefix)) = queue.pop_front() {
        let Some(props) = table.get("properties").and_then(Value::as_object) else { continue };
        for (name, sub) in props {
            let path = field_path(&prefix, name);
            if let Some(r) = ref_name(sub) {
                if homes.iter().any(|(n, _)| *n == r) {
                    continue;
                }
                homes.push((r, path.clone()));
            }
            for (t, suffix) in nested(root, sub) {
                queue.push_back((t, format!("{path}{suffix}")));
            }
        }
    }
    homes
}

/// Every field of a schema, depth first.
pub fn fields(schema: &schemars::Schema) -> Vec<Field> {
    let root = schema.as_value();
    let mut out = vec![];
    let homes = homes(root);
    for (t, _) in nested(root, root) {
        walk(root, t, "", &mut out, &homes);
    }
    out
}

/// The reference table of `fields` (Markdown).
pub fn table(fields: &[Field]) -> String {
    let mut s = String::from("| field | type | required | default | meaning |\n|---|---|---|---|---|\n");
    for f in fields {
        let cell = |t: &str| t.replace('|', "\\|");
        s.push_str(&format!(
            "| `{}` | {} | {} | {} | {} |\n",
            f.path,
            cell(&f.kind),
            if f.required { "yes" } else { "" },
            f.default.as_deref().map(|d| format!("`{}`", cell(d))).unwrap_or_default(),
            cell(&f.description)
        ));
    }
    s
}
