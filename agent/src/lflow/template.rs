//! Chassis template variables (`^NAME`), expanded before lexing as ovn-controller does.

use std::collections::HashMap;

/// Replaces each `^NAME` outside quoted strings by its value; unknown names become `NAME`.
pub fn expand_templates<S: std::hash::BuildHasher>(
    text: &str,
    vars: &HashMap<String, String, S>,
) -> String {
    if !text.contains('^') {
        return text.to_string();
    }
    let mut out = String::with_capacity(text.len());
    let mut chars = text.char_indices().peekable();
    let mut in_string = false;
    while let Some((i, c)) = chars.next() {
        if in_string {
            out.push(c);
            if c == '\\' {
                if let Some((_, e)) = chars.next() {
                    out.push(e);
                }
            } else if c == '"' {
                in_string = false;
            }
            continue;
        }
        match c {
            '"' => {
                in_string = true;
                out.push(c);
            }
            '^' => {
                let start = i + 1;
                let mut end = start;
                while let Some(&(j, d)) = chars.peek() {
                    if d.is_ascii_alphanumeric() || d == '_' || (d == '.' && j > start) {
                        end = j + d.len_utf8();
                        chars.next();
                    } else {
                        break;
                    }
                }
                let name = &text[start..end];
                out.push_str(vars.get(name).map_or(name, String::as_str));
            }
            _ => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expands() {
        let vars: HashMap<String, String> = [("VIP".to_string(), "10.0.0.200".to_string())].into();
        assert_eq!(
            expand_templates("ip4.dst == ^VIP && x == \"^VIP\"", &vars),
            "ip4.dst == 10.0.0.200 && x == \"^VIP\""
        );
        assert_eq!(
            expand_templates("tcp.dst == ^VPORT", &vars),
            "tcp.dst == VPORT"
        );
    }
}
