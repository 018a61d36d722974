//! SCIM PATCH (RFC 7644 §3.5.2) on a resource's JSON: `add`, `remove` and `replace`, with or
//! without a path, a path being `attr`, `attr.sub`, `attr[filter]` or `attr[filter].sub`.
//! Attribute names match case-insensitively and keep the resource's own spelling. The
//! operations apply in order to a copy; the caller stores the result only when every one
//! applied and the result is a valid resource, so a failed PATCH changes nothing.

use serde::Deserialize;
use serde_json::{Map, Value};

use super::filter::{self, Filter};

/// One operation of a PatchOp request.
#[derive(Clone, Debug, Deserialize)]
pub struct Operation {
    pub op: String,
    #[serde(default)]
    pub path: Option<String>,
    #[serde(default)]
    pub value: Option<Value>,
}

/// Why a PATCH was refused: the RFC's `scimType` and what to do.
#[derive(Debug, PartialEq, Eq)]
pub struct PatchError {
    pub scim_type: &'static str,
    pub detail: String,
}

fn err(scim_type: &'static str, detail: impl Into<String>) -> PatchError {
    PatchError { scim_type, detail: detail.into() }
}

/// A parsed path.
#[derive(Debug)]
struct Target {
    attr: String,
    filter: Option<Filter>,
    sub: Option<String>,
}

fn target(path: &str) -> Result<Target, PatchError> {
    let path = path.trim();
    let (head, filter, tail) = match path.find('[') {
        Some(open) => {
            let close = path
                .rfind(']')
                .ok_or_else(|| err("invalidPath", format!("`{path}`: a `[` is not closed")))?;
            let inner = filter::parse(&path[open + 1..close]).map_err(|e| err("invalidFilter", e))?;
            (&path[..open], Some(inner), path[close + 1..].strip_prefix('.'))
        }
        None => (path, None, None),
    };
    let mut parts = filter::attr_path(head).map_err(|e| err("invalidPath", e))?;
    let sub = match tail {
        Some(t) => Some(filter::attr_path(t).map_err(|e| err("invalidPath", e))?.join(".")),
        None if parts.len() == 2 => parts.pop(),
        None => None,
    };
    Ok(Target { attr: parts.remove(0), filter, sub })
}

fn key_of(obj: &Map<String, Value>, name: &str) -> Option<String> {
    obj.keys().find(|k| k.eq_ignore_ascii_case(name)).cloned()
}

/// Sets `name` in `obj`, keeping an existing key's spelling.
fn put(obj: &mut Map<String, Value>, name: &str, v: Value) {
    let k = key_of(obj, name).unwrap_or_else(|| name.to_string());
    obj.insert(k, v);
}

/// Applies `ops` to `doc` in order.
pub fn apply(doc: &mut Value, ops: &[Operation]) -> Result<(), PatchError> {
    if ops.is_empty() {
        return Err(err("invalidSyntax", "a PatchOp needs at least one operation in `Operations`"));
    }
    for o in ops {
        let obj = doc.as_object_mut().ok_or_else(|| err("invalidSyntax", "the resource is not an object"))?;
        match (o.op.to_ascii_lowercase().as_str(), &o.path) {
            ("add" | "replace", None) => {
                let Some(Value::Object(values)) = &o.value else {
                    return Err(err("invalidValue", "without a path, the value is an object of attributes"));
                };
                let replace = o.op.eq_ignore_ascii_case("replace");
                for (k, v) in values {
                    let t = target(k)?;
                    set(obj, &t, v.clone(), replace)?;
                }
            }
            ("add" | "replace", Some(p)) => {
                let v = o
                    .value
                    .clone()
                    .ok_or_else(|| err("invalidValue", format!("`{}` needs a value", o.op)))?;
                set(obj, &target(p)?, v, o.op.eq_ignore_ascii_case("replace"))?;
            }
            ("remove", Some(p)) => remove(obj, &target(p)?, o.value.as_ref())?,
            ("remove", None) => return Err(err("noTarget", "`remove` needs a path")),
            (other, _) => {
                return Err(err(
                    "invalidSyntax",
                    format!("`{other}` is not an operation (add, remove, replace)"),
                ));
            }
        }
    }
    Ok(())
}

fn set(obj: &mut Map<String, Value>, t: &Target, v: Value, replace: bool) -> Result<(), PatchError> {
    let existing = key_of(obj, &t.attr).and_then(|k| obj.get_mut(&k));
    match (existing, &t.filter, &t.sub) {
        (Some(Value::Array(items)), Some(f), sub) => {
            let mut hit = false;
            for item in items.iter_mut().filter(|i| f.matches(i)) {
                hit = true;
                match (sub, item.as_object_mut(), &v) {
                    (Some(s), Some(o), _) => put(o, s, v.clone()),
                    (None, Some(o), Value::Object(fields)) => {
                        fields.iter().for_each(|(k, x)| put(o, k, x.clone()))
                    }
                    _ => *item = v.clone(),
                }
            }
            if hit {
                Ok(())
            } else {
                Err(err("noTarget", format!("no value of `{}` matches the filter", t.attr)))
            }
        }
        (_, Some(_), _) => Err(err("noTarget", format!("`{}` has no values to filter", t.attr))),
        (Some(Value::Object(o)), None, Some(s)) => {
            put(o, s, v);
            Ok(())
        }
        (_, None, Some(s)) => {
            let mut o = Map::new();
            o.insert(s.clone(), v);
            put(obj, &t.attr, Value::Object(o));
            Ok(())
        }
        (Some(Value::Array(items)), None, None) if !replace => {
            let new = match v {
                Value::Array(vs) => vs,
                one => vec![one],
            };
            for x in new {
                if !items.contains(&x) {
                    items.push(x);
                }
            }
            Ok(())
        }
        (Some(Value::Object(o)), None, None) if !replace && v.is_object() => {
            for (k, x) in v.as_object().expect("an object") {
                put(o, k, x.clone());
            }
            Ok(())
        }
        (_, None, None) => {
            put(obj, &t.attr, v);
            Ok(())
        }
    }
}

fn remove(obj: &mut Map<String, Value>, t: &Target, value: Option<&Value>) -> Result<(), PatchError> {
    let Some(k) = key_of(obj, &t.attr) else {
        return if t.filter.is_some() {
            Err(err("noTarget", format!("`{}` has no values to filter", t.attr)))
        } else {
            Ok(())
        };
    };
    match (obj.get_mut(&k), &t.filter, &t.sub) {
        (Some(Value::Array(items)), Some(f), None) => {
            let before = items.len();
            items.retain(|i| !f.matches(i));
            if items.len() == before {
                return Err(err("noTarget", format!("no value of `{}` matches the filter", t.attr)));
            }
            if items.is_empty() {
                obj.remove(&k);
            }
        }
        (Some(Value::Array(items)), Some(f), Some(s)) => {
            for item in items.iter_mut().filter(|i| f.matches(i)) {
                if let Some(o) = item.as_object_mut()
                    && let Some(sk) = key_of(o, s)
                {
                    o.remove(&sk);
                }
            }
        }
        (Some(Value::Array(items)), None, None) if value.is_some_and(Value::is_array) => {
            // Azure AD's form: `{"op": "remove", "path": "members", "value": [{"value": "id"}]}`.
            let gone = value.and_then(Value::as_array).expect("an array");
            items.retain(|i| !gone.iter().any(|g| same_member(i, g)));
            if items.is_empty() {
                obj.remove(&k);
            }
        }
        (Some(Value::Object(o)), None, Some(s)) => {
            if let Some(sk) = key_of(o, s) {
                o.remove(&sk);
            }
        }
        (_, Some(_), _) => return Err(err("noTarget", format!("`{}` has no values to filter", t.attr))),
        _ => {
            obj.remove(&k);
        }
    }
    Ok(())
}

/// Whether two values of a multi-valued attribute name the same thing (by `value`, else whole).
fn same_member(a: &Value, b: &Value) -> bool {
    match (a.get("value"), b.get("value")) {
        (Some(x), Some(y)) => x == y,
        _ => a == b,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ops(v: Value) -> Vec<Operation> {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn operations_apply_as_the_rfc_describes() {
        let mut doc = json!({ "userName": "a", "members": [{ "value": "u1" }, { "value": "u2" }] });
        apply(
            &mut doc,
            &ops(json!([
                { "op": "replace", "path": "USERNAME", "value": "b" },
                { "op": "add", "path": "members", "value": [{ "value": "u3" }, { "value": "u1" }] },
                { "op": "remove", "path": "members[value eq \"u2\"]" },
                { "op": "add", "value": { "displayName": "B", "name.givenName": "Bee" } },
                { "op": "replace", "path": "active", "value": false },
            ])),
        )
        .unwrap();
        assert_eq!(
            doc,
            json!({ "userName": "b", "members": [{ "value": "u1" }, { "value": "u3" }],
                                "displayName": "B", "name": { "givenName": "Bee" }, "active": false })
        );
        apply(&mut doc, &ops(json!([{ "op": "remove", "path": "members", "value": [{ "value": "u1" }] }])))
            .unwrap();
        assert_eq!(doc["members"], json!([{ "value": "u3" }]));
        let before = doc.clone();
        let e = apply(&mut doc, &ops(json!([{ "op": "remove", "path": "members[value eq \"zz\"]" }])))
            .unwrap_err();
        assert_eq!(e.scim_type, "noTarget");
        assert_eq!(
            apply(&mut doc, &ops(json!([{ "op": "move", "path": "a" }]))).unwrap_err().scim_type,
            "invalidSyntax"
        );
        assert_eq!(apply(&mut doc, &ops(json!([{ "op": "remove" }]))).unwrap_err().scim_type, "noTarget");
        assert_eq!(
            apply(&mut doc, &ops(json!([{ "op": "add", "path": "a[", "value": 1 }]))).unwrap_err().scim_type,
            "invalidPath"
        );
        assert_eq!(doc, before, "a refused operation changes nothing it did not apply");
    }
}
