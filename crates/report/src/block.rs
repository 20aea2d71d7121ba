//! The neutral blocks a report section is made of — headings, paragraphs, lists, tables whose
//! cells may carry a tone, a tooltip or a heat — and their three renderers: plain text (after the
//! terminal table), Markdown and HTML. A section ([`super::Section`]) says what it shows as
//! [`Block`]s once; how each format lays it out, and every escape, is here, through
//! [`super::escape`].
//!
//! Layout, per format:
//! * Markdown: every block after a blank line; headings `##`/`###`; a table's numeric columns
//!   (from [`Table::numeric_from`] on) right-aligned (`---:`), its [`Table::left`] columns
//!   left-aligned (`:---`).
//! * HTML: one element per block, each on a line of its own; a heading's `id`; a table's class,
//!   its numeric cells `class="num"`, its left columns' header and cells `class="l"` (the page
//!   right-aligns every other cell), a cell's tone as its class, its tooltip as `title`, its
//!   heat as a background from green (0) to red (1); a list item's colour swatch.
//! * Text: headings and paragraphs after a blank line, tables and lists indented by two spaces
//!   directly below, columns padded to their widest cell; [`Table::text_omits`] leaves a wide
//!   column out. [`Block::Html`] is HTML only.
//!
//! A format can be left out of a block with [`Block::Only`] (a sentence the page says in its
//! heading paragraph and the Markdown below its table). Invariant: no blocks render to "".

use super::escape::{html as esc, markdown as md};
use std::fmt::Write as _;

/// The formats a section renders to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Formats {
    text: bool,
    markdown: bool,
    html: bool,
}

impl Formats {
    /// The plain text after the terminal table.
    pub const TEXT: Formats = Formats {
        text: true,
        markdown: false,
        html: false,
    };
    /// Markdown.
    pub const MARKDOWN: Formats = Formats {
        text: false,
        markdown: true,
        html: false,
    };
    /// HTML.
    pub const HTML: Formats = Formats {
        text: false,
        markdown: false,
        html: true,
    };
    /// Markdown and HTML, not the terminal.
    pub const PAGES: Formats = Formats {
        text: false,
        markdown: true,
        html: true,
    };
}

/// How a cell reads at a glance (its HTML class).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tone {
    /// `good`.
    Good,
    /// `bad`.
    Bad,
    /// `grey`: not measured, not applicable.
    Grey,
}

impl Tone {
    fn class(self) -> &'static str {
        match self {
            Tone::Good => "good",
            Tone::Bad => "bad",
            Tone::Grey => "grey",
        }
    }
}

/// One cell of a [`Table`].
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Cell {
    /// What the cell says, unescaped.
    pub text: String,
    /// Its tone (HTML class).
    pub tone: Option<Tone>,
    /// A tooltip (HTML `title`).
    pub title: Option<String>,
    /// How bad it is in [0, 1]: the HTML background from green (0) to red (1).
    pub heat: Option<f64>,
}

impl Cell {
    /// A cell with `text` and nothing else.
    pub fn new(text: impl Into<String>) -> Cell {
        Cell {
            text: text.into(),
            ..Cell::default()
        }
    }

    /// The same cell with the heat `heat` (none when `None`).
    pub fn with_heat(self, heat: Option<f64>) -> Cell {
        Cell { heat, ..self }
    }
}

impl From<String> for Cell {
    fn from(text: String) -> Cell {
        Cell::new(text)
    }
}

impl From<&str> for Cell {
    fn from(text: &str) -> Cell {
        Cell::new(text)
    }
}

/// A table: a header and rows of cells.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Table {
    /// The HTML class.
    pub class: Option<String>,
    /// The header cells.
    pub head: Vec<String>,
    /// The rows, each with one cell per header cell.
    pub rows: Vec<Vec<Cell>>,
    /// The first numeric column (right-aligned in Markdown, `class="num"` in HTML); `None`:
    /// none is.
    pub numeric_from: Option<usize>,
    /// The columns of words set left wherever they stand, a verdict after the numbers too
    /// (`:---` in Markdown, `class="l"` on the header and the cells in HTML); never numeric.
    pub left: Vec<usize>,
    /// A column the terminal leaves out (too wide there).
    pub text_omits: Option<usize>,
}

/// One item of a list.
#[derive(Clone, Debug, PartialEq)]
pub struct Item {
    /// The item's text, unescaped.
    pub text: String,
    /// A CSS colour shown as a swatch before it in HTML (the series' colour in a chart).
    pub swatch: Option<String>,
}

impl From<String> for Item {
    fn from(text: String) -> Item {
        Item { text, swatch: None }
    }
}

/// One block of a section.
#[derive(Clone, Debug, PartialEq)]
pub enum Block {
    /// A heading of `level` 2 (the section) or 3 (a part of it), with an HTML `id`.
    Heading {
        /// 2 or 3.
        level: u8,
        /// The heading, unescaped.
        text: String,
        /// The HTML anchor, unescaped.
        id: Option<String>,
    },
    /// A paragraph, unescaped.
    Paragraph(String),
    /// A bulleted list, with an HTML class; renders to "" without items.
    List {
        /// The HTML class.
        class: Option<String>,
        /// The items.
        items: Vec<Item>,
    },
    /// A table.
    Table(Table),
    /// HTML made elsewhere (a chart's figure), already escaped; the page only.
    Html(String),
    /// A block only `Formats` print.
    Only(Formats, Box<Block>),
}

impl Block {
    /// A heading of `level` without an anchor.
    pub fn heading(level: u8, text: impl Into<String>) -> Block {
        Block::Heading {
            level,
            text: text.into(),
            id: None,
        }
    }

    /// A paragraph.
    pub fn paragraph(text: impl Into<String>) -> Block {
        Block::Paragraph(text.into())
    }

    /// `self`, printed by `formats` only.
    pub fn only(self, formats: Formats) -> Block {
        Block::Only(formats, Box::new(self))
    }
}

/// The blocks as Markdown.
pub fn markdown(blocks: &[Block]) -> String {
    let mut out = String::new();
    for b in blocks {
        markdown_block(&mut out, b);
    }
    out
}

fn markdown_block(out: &mut String, block: &Block) {
    match block {
        Block::Heading { level, text, .. } => {
            let _ = writeln!(out, "\n{} {}", "#".repeat(*level as usize), md(text));
        }
        Block::Paragraph(text) => {
            let _ = writeln!(out, "\n{}", md(text));
        }
        Block::List { items, .. } => {
            if !items.is_empty() {
                out.push('\n');
            }
            for i in items {
                let _ = writeln!(out, "- {}", md(&i.text));
            }
        }
        Block::Table(t) => {
            let head: Vec<String> = t.head.iter().map(|h| md(h)).collect();
            let _ = write!(out, "\n| {} |\n|", head.join(" | "));
            for i in 0..t.head.len() {
                out.push_str(if t.left.contains(&i) {
                    ":---|"
                } else if is_numeric(t, i) {
                    "---:|"
                } else {
                    "---|"
                });
            }
            out.push('\n');
            for r in &t.rows {
                let cells: Vec<String> = r.iter().map(|c| md(&c.text)).collect();
                let _ = writeln!(out, "| {} |", cells.join(" | "));
            }
        }
        Block::Html(_) => {}
        Block::Only(f, b) => {
            if f.markdown {
                markdown_block(out, b);
            }
        }
    }
}

fn is_numeric(t: &Table, column: usize) -> bool {
    t.numeric_from.is_some_and(|n| column >= n) && !t.left.contains(&column)
}

/// `l` for a [`Table::left`] column: the HTML class of its header and its cells.
fn left_class(t: &Table, column: usize) -> Option<&'static str> {
    t.left.contains(&column).then_some("l")
}

/// The blocks as HTML.
pub fn html(blocks: &[Block]) -> String {
    let mut out = String::new();
    for b in blocks {
        html_block(&mut out, b);
    }
    out
}

fn class_attr(class: Option<&str>) -> String {
    class.map_or(String::new(), |c| format!(" class=\"{}\"", esc(c)))
}

fn html_block(out: &mut String, block: &Block) {
    match block {
        Block::Heading { level, text, id } => {
            let id = id.as_ref().map_or(String::new(), |id| format!(" id=\"{}\"", esc(id)));
            let _ = writeln!(out, "<h{level}{id}>{}</h{level}>", esc(text));
        }
        Block::Paragraph(text) => {
            let _ = writeln!(out, "<p>{}</p>", esc(text));
        }
        Block::List { class, items } => {
            if items.is_empty() {
                return;
            }
            let _ = write!(out, "<ul{}>", class_attr(class.as_deref()));
            for i in items {
                let swatch = i.swatch.as_ref().map_or(String::new(), |c| {
                    format!("<span class=\"swatch\" style=\"background:{}\"></span>", esc(c))
                });
                let _ = write!(out, "<li>{swatch}{}</li>", esc(&i.text));
            }
            out.push_str("</ul>\n");
        }
        Block::Table(t) => {
            let _ = write!(out, "<table{}><thead><tr>", class_attr(t.class.as_deref()));
            for (i, h) in t.head.iter().enumerate() {
                let _ = write!(out, "<th{}>{}</th>", class_attr(left_class(t, i)), esc(h));
            }
            out.push_str("</tr></thead><tbody>");
            for r in &t.rows {
                out.push_str("<tr>");
                for (i, c) in r.iter().enumerate() {
                    let mut classes: Vec<&str> = left_class(t, i).into_iter().collect();
                    if is_numeric(t, i) {
                        classes.push("num");
                    }
                    if let Some(tone) = c.tone {
                        classes.push(tone.class());
                    }
                    let class = (!classes.is_empty()).then(|| classes.join(" "));
                    let title = c
                        .title
                        .as_ref()
                        .map_or(String::new(), |t| format!(" title=\"{}\"", esc(t)));
                    let style = c.heat.map_or(String::new(), |h| {
                        format!(
                            " style=\"background:hsl({:.0},70%,85%)\"",
                            120.0 * (1.0 - h.clamp(0.0, 1.0))
                        )
                    });
                    let _ = write!(
                        out,
                        "<td{}{style}{title}>{}</td>",
                        class_attr(class.as_deref()),
                        esc(&c.text)
                    );
                }
                out.push_str("</tr>");
            }
            out.push_str("</tbody></table>\n");
        }
        Block::Html(html) => {
            out.push_str(html);
            if !html.is_empty() && !html.ends_with('\n') {
                out.push('\n');
            }
        }
        Block::Only(f, b) => {
            if f.html {
                html_block(out, b);
            }
        }
    }
}

/// The blocks as the plain text after the terminal table.
pub fn text(blocks: &[Block]) -> String {
    let mut out = String::new();
    for b in blocks {
        text_block(&mut out, b);
    }
    out
}

fn text_block(out: &mut String, block: &Block) {
    match block {
        Block::Heading { text, .. } | Block::Paragraph(text) => {
            let _ = writeln!(out, "\n{text}");
        }
        Block::List { items, .. } => {
            for i in items {
                let _ = writeln!(out, "  {}", i.text);
            }
        }
        Block::Table(t) => {
            let keep = |i: &usize| t.text_omits != Some(*i);
            let lines: Vec<Vec<&str>> = std::iter::once(t.head.iter().map(String::as_str).collect::<Vec<_>>())
                .chain(t.rows.iter().map(|r| r.iter().map(|c| c.text.as_str()).collect()))
                .map(|l| {
                    l.into_iter()
                        .enumerate()
                        .filter(|(i, _)| keep(i))
                        .map(|(_, c)| c)
                        .collect()
                })
                .collect();
            let columns = lines.iter().map(Vec::len).max().unwrap_or(0);
            let widths: Vec<usize> = (0..columns)
                .map(|i| {
                    lines
                        .iter()
                        .map(|l| l.get(i).map_or(0, |c| c.chars().count()))
                        .max()
                        .unwrap_or(0)
                })
                .collect();
            for l in &lines {
                let cells: Vec<String> = l.iter().zip(&widths).map(|(c, w)| format!("{c:<w$}")).collect();
                let _ = writeln!(out, "  {}", cells.join("  ").trim_end());
            }
        }
        Block::Html(_) => {}
        Block::Only(f, b) => {
            if f.text {
                text_block(out, b);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc() -> Vec<Block> {
        vec![
            Block::Heading {
                level: 2,
                text: "Aging: a_ <b>".into(),
                id: Some("aging-a\"".into()),
            },
            Block::paragraph("Means *over* repeats."),
            Block::List {
                class: Some("fits".into()),
                items: vec![
                    Item {
                        text: "ext4: k = 1".into(),
                        swatch: Some("#1f77b4".into()),
                    },
                    Item::from("xfs | k = 2".to_string()),
                ],
            },
            Block::Table(Table {
                class: Some("aging".into()),
                head: vec!["filesystem".into(), "read (MiB/s)".into(), "wide".into()],
                rows: vec![
                    vec![
                        "ext4".into(),
                        Cell {
                            tone: Some(Tone::Good),
                            title: Some("p < 0.05".into()),
                            ..Cell::new("100")
                        },
                        "a long documented column".into(),
                    ],
                    vec!["x|fs".into(), Cell::new("90").with_heat(Some(1.0)), "".into()],
                ],
                numeric_from: Some(1),
                left: Vec::new(),
                text_omits: Some(2),
            }),
            Block::Html("<figure>chart</figure>".into()),
            Block::paragraph("markdown only").only(Formats::MARKDOWN),
        ]
    }

    #[test]
    fn markdown_escapes_every_text_and_right_aligns_numbers() {
        assert_eq!(
            markdown(&doc()),
            "\n## Aging: a\\_ \\<b\\>\n\nMeans \\*over\\* repeats.\n\n- ext4: k = 1\n- xfs \\| k = 2\n\
             \n| filesystem | read (MiB/s) | wide |\n|---|---:|---:|\n| ext4 | 100 | a long documented column |\n| x\\|fs | 90 |  |\n\
             \nmarkdown only\n"
        );
    }

    #[test]
    fn html_escapes_and_carries_classes_titles_heat_and_raw_figures() {
        let h = html(&doc());
        assert!(
            h.starts_with("<h2 id=\"aging-a&quot;\">Aging: a_ &lt;b&gt;</h2>\n<p>Means *over* repeats.</p>\n"),
            "{h}"
        );
        assert!(h.contains("<ul class=\"fits\"><li><span class=\"swatch\" style=\"background:#1f77b4\"></span>ext4: k = 1</li><li>xfs | k = 2</li></ul>\n"), "{h}");
        assert!(h.contains("<table class=\"aging\"><thead><tr><th>filesystem</th><th>read (MiB/s)</th><th>wide</th></tr></thead><tbody>"), "{h}");
        assert!(
            h.contains("<td class=\"num good\" title=\"p &lt; 0.05\">100</td>"),
            "{h}"
        );
        assert!(
            h.contains("<td class=\"num\" style=\"background:hsl(0,70%,85%)\">90</td>"),
            "{h}"
        );
        assert!(
            h.contains("<figure>chart</figure>\n") && !h.contains("markdown only"),
            "{h}"
        );
    }

    #[test]
    fn left_columns_are_set_left_even_after_the_numbers() {
        let t = vec![Block::Table(Table {
            head: vec!["fs".into(), "n".into(), "ratio".into(), "verdict".into()],
            rows: vec![vec!["ext4".into(), "2/2".into(), "1.02".into(), "agrees".into()]],
            numeric_from: Some(1),
            left: vec![0, 3],
            ..Table::default()
        })];
        assert_eq!(
            markdown(&t),
            "\n| fs | n | ratio | verdict |\n|:---|---:|---:|:---|\n| ext4 | 2/2 | 1.02 | agrees |\n"
        );
        assert_eq!(
            html(&t),
            "<table><thead><tr><th class=\"l\">fs</th><th>n</th><th>ratio</th><th class=\"l\">verdict</th></tr></thead>\
             <tbody><tr><td class=\"l\">ext4</td><td class=\"num\">2/2</td><td class=\"num\">1.02</td><td class=\"l\">agrees</td></tr></tbody></table>\n"
        );
        assert_eq!(text(&t), "  fs    n    ratio  verdict\n  ext4  2/2  1.02   agrees\n");
    }

    #[test]
    fn text_pads_columns_and_leaves_out_the_wide_one() {
        assert_eq!(
            text(&doc()),
            "\nAging: a_ <b>\n\nMeans *over* repeats.\n  ext4: k = 1\n  xfs | k = 2\n  filesystem  read (MiB/s)\n  ext4        100\n  x|fs        90\n"
        );
        assert_eq!(text(&[]), "");
        assert_eq!(markdown(&[]), "");
        assert_eq!(html(&[]), "");
    }
}
