//! One escaper per output language of the report: [`html`], [`markdown`] and [`csv`]. Every
//! renderer (report, compare, charts) escapes through these, so a name prints the same way
//! wherever it appears in one format. The terminal table needs none.
//!
//! References: HTML Standard §13.1.2.6 (text and attribute values); GitHub Flavored Markdown
//! spec §6.1 (backslash escapes), §6.2 (emphasis: an intraword `_` never opens or closes
//! emphasis), §4.10 (tables: `|` in a cell); RFC 4180 §2 (CSV fields).
//!
//! A leaf module: it imports nothing from the rest of the report.

/// Escapes text for HTML element content and double- or single-quoted attribute values.
pub fn html(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for ch in text.chars() {
        match ch {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            _ => out.push(ch),
        }
    }
    out
}

/// Escapes text for a Markdown table cell, heading or list item: `\ | * _ ` [ ] < >` get a
/// backslash and line breaks become spaces. `_` is escaped only at a word edge: GitHub Markdown
/// never reads an intraword `_` as emphasis, so `seq_write_block` stays readable.
pub fn markdown(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    for (i, &ch) in chars.iter().enumerate() {
        let word = |j: Option<usize>| j.and_then(|j| chars.get(j)).is_some_and(|c| c.is_alphanumeric());
        let intraword = word(i.checked_sub(1)) && word(Some(i + 1));
        match ch {
            '_' if intraword => out.push(ch),
            '\\' | '|' | '*' | '_' | '`' | '[' | ']' | '<' | '>' => {
                out.push('\\');
                out.push(ch);
            }
            '\n' | '\r' => out.push(' '),
            _ => out.push(ch),
        }
    }
    out
}

/// Quotes a CSV field per RFC 4180 when it needs it: a field containing `,`, `"`, CR or LF is
/// wrapped in double quotes with inner quotes doubled; any other field is unchanged.
pub fn csv(field: &str) -> String {
    if field.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", field.replace('"', "\"\""))
    } else {
        field.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn html_escapes_markup_and_both_quotes() {
        assert_eq!(
            html("<a href=\"x\">'&'</a>"),
            "&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;"
        );
        assert_eq!(html("btrfs lzo"), "btrfs lzo");
    }

    #[test]
    fn markdown_escaping() {
        assert_eq!(markdown("a|b"), "a\\|b");
        assert_eq!(markdown("seq_write_block"), "seq_write_block");
        assert_eq!(markdown("_tmp_ and *x*"), "\\_tmp\\_ and \\*x\\*");
        assert_eq!(markdown("two\nlines <br>"), "two lines \\<br\\>");
        assert_eq!(markdown("[a](b) `c` \\"), "\\[a\\](b) \\`c\\` \\\\");
    }

    #[test]
    fn csv_quotes_only_when_needed() {
        assert_eq!(csv("plain"), "plain");
        assert_eq!(csv("a,b"), "\"a,b\"");
        assert_eq!(csv("say \"hi\""), "\"say \"\"hi\"\"\"");
        assert_eq!(csv("two\nlines"), "\"two\nlines\"");
        assert_eq!(csv(""), "");
    }
}
