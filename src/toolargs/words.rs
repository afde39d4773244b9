//! What a word says about a string: an argument's name, its schema's `format` and
//! description, and a value's own shape at call time. Pure functions over text; the
//! inference (`schema.rs`) and the call-time walk (`mod.rs`) combine them.

crate::coded::coded! {
    /// What one signal says about the strings at one place of a tool's arguments.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
    pub enum Role {
        /// Not a path: a regular expression, a URL, a REST endpoint, a query, text. Passes
        /// untouched under `tools.infer = "schema"`, except a whole `file:` URI (file access
        /// whatever the argument is called).
        NotPath => "not a path (a whole file: URI is)",
        /// Unknown: the value's own shape decides (an absolute path, `~/…`, a `file:` URI, a
        /// relative path with `..`).
        Uncertain => "by value shape",
        /// A name that is often, not always, a path (`source`, `target`, `destination`): the
        /// value's shape decides under `"schema"`, a path under `"strict"`.
        Weak => "path if strict, else by value shape",
        /// A URI (`format: "uri"`, named `uri`): a `file:` URI is checked, other schemes
        /// pass, a value without a scheme is judged by its shape.
        Uri => "uri",
        /// A filesystem path (or a `file:` URI): checked, relative values included.
        Path => "path",
    }
    /// The word `policy explain` prints.
    pub fn as_str;
}

/// The words of an identifier: `filePath`, `file_path`, `file-path` and `FILE_PATH` all give
/// `["file", "path"]`.
pub fn split_name(name: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut cur = String::new();
    let mut prev_lower = false;
    for ch in name.chars() {
        if !ch.is_alphanumeric() {
            if !cur.is_empty() {
                words.push(std::mem::take(&mut cur));
            }
            prev_lower = false;
            continue;
        }
        if ch.is_uppercase() && prev_lower && !cur.is_empty() {
            words.push(std::mem::take(&mut cur));
        }
        prev_lower = ch.is_lowercase() || ch.is_ascii_digit();
        cur.extend(ch.to_lowercase());
    }
    if !cur.is_empty() {
        words.push(cur);
    }
    words
}

/// Head nouns that name a path (the last word of a name decides: `repo_path` is a path,
/// `path_prefix` is not necessarily).
const PATH_NAMES: &[&str] = &[
    "path",
    "paths",
    "file",
    "files",
    "filepath",
    "filepaths",
    "filename",
    "filenames",
    "pathname",
    "directory",
    "directories",
    "dir",
    "dirs",
    "folder",
    "folders",
    "cwd",
    "workdir",
    "root",
    "roots",
    "dirname",
    "basedir",
];
/// Head nouns that name a URI.
const URI_NAMES: &[&str] = &["uri", "uris"];
/// Head nouns that are often, not always, paths.
const WEAK_NAMES: &[&str] = &[
    "source",
    "sources",
    "destination",
    "destinations",
    "src",
    "dst",
    "dest",
    "target",
    "targets",
    "input",
    "output",
    "location",
];
/// Head nouns of values that are not paths even when they look like one.
const NOT_PATH_NAMES: &[&str] = &[
    "url",
    "urls",
    "href",
    "link",
    "links",
    "endpoint",
    "route",
    "pattern",
    "patterns",
    "regex",
    "regexp",
    "glob",
    "globs",
    "query",
    "q",
    "search",
    "expression",
    "expr",
    "jq",
    "sed",
    "filter",
    "selector",
    "xpath",
    "jsonpath",
    "command",
    "cmd",
    "script",
    "code",
    "function",
    "text",
    "content",
    "contents",
    "body",
    "message",
    "prompt",
    "description",
    "title",
    "comment",
    "timezone",
];

/// What an argument's name says.
pub fn name_role(name: &str) -> Option<(Role, String)> {
    let words = split_name(name);
    let last = words.last()?.as_str();
    // The first list holding the head noun decides.
    let (_, role) = [
        (PATH_NAMES, Role::Path),
        (URI_NAMES, Role::Uri),
        (NOT_PATH_NAMES, Role::NotPath),
        (WEAK_NAMES, Role::Weak),
    ]
    .into_iter()
    .find(|(names, _)| names.contains(&last))?;
    Some((role, format!("named `{name}`")))
}

/// What a schema `format` says.
pub fn format_role(format: &str) -> Option<(Role, String)> {
    let role = match format {
        "uri" | "uri-reference" | "iri" | "iri-reference" | "file-uri" => Role::Uri,
        "path" | "file-path" | "filepath" | "directory" | "dir-path" => Role::Path,
        "regex"
        | "uri-template"
        | "email"
        | "hostname"
        | "date"
        | "date-time"
        | "time"
        | "uuid"
        | "json-pointer"
        | "relative-json-pointer" => Role::NotPath,
        _ => return None,
    };
    Some((role, format!("format \"{format}\"")))
}

/// Phrases that say a value is not a filesystem path, checked before the path words (a
/// "REST endpoint path" is not a file).
const NOT_PATH_PHRASES: &[&[&str]] = &[
    &["regular", "expression"],
    &["regex"],
    &["regexp"],
    &["jq"],
    &["sed"],
    &["endpoint"],
    &["url", "path"],
    &["api", "path"],
    &["http", "path"],
    &["rest"],
    &["route"],
    &["query", "string"],
    &["glob", "pattern"],
    &["search", "pattern"],
    &["css", "selector"],
    &["xpath"],
    &["json", "path"],
    &["jsonpath"],
    &["json", "pointer"],
];
/// Words that say a value is a path, in the languages where it is cheap to say.
const PATH_WORDS: &[&str] = &[
    "path",
    "paths",
    "file",
    "files",
    "filename",
    "filepath",
    "directory",
    "directories",
    "folder",
    "folders",
    // fr, de, es, pt, it
    "chemin",
    "fichier",
    "répertoire",
    "dossier",
    "pfad",
    "datei",
    "verzeichnis",
    "ordner",
    "ruta",
    "archivo",
    "directorio",
    "carpeta",
    "caminho",
    "arquivo",
    "diretório",
    "pasta",
    "percorso",
    "cartella",
];
/// Path words of scripts without spaces between words (matched as substrings).
const PATH_SUBSTRINGS: &[&str] = &[
    "ファイル",
    "パス",
    "ディレクトリ",
    "路径",
    "文件",
    "目录",
    "경로",
    "파일",
];

/// Description text read at most (a hostile server may send megabytes).
const DESCRIPTION_MAX: usize = 2048;

/// What a schema's description (or title) says.
pub fn description_role(text: &str) -> Option<(Role, String)> {
    let mut end = text.len().min(DESCRIPTION_MAX);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let text = &text[..end];
    let words: Vec<String> = text
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect();
    for phrase in NOT_PATH_PHRASES {
        if words.windows(phrase.len()).any(|w| w == *phrase) {
            return Some((
                Role::NotPath,
                format!("described as \"{}\"", phrase.join(" ")),
            ));
        }
    }
    if let Some(w) = words.iter().find(|w| PATH_WORDS.contains(&w.as_str())) {
        return Some((Role::Path, format!("described as a {w}")));
    }
    if let Some(w) = PATH_SUBSTRINGS.iter().find(|w| text.contains(**w)) {
        return Some((Role::Path, format!("described as a {w}")));
    }
    None
}

/// What a value looks like, for arguments whose role the schema leaves open.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shape {
    /// A `file:` URI, or one of a scheme hosts resolve to a local file (`vscode-file:`,
    /// `jar:file:…`: [`crate::uri::wraps_a_file`]).
    FileUri,
    /// An absolute POSIX path.
    Absolute,
    /// `~` or `~/…`: a home-relative path, expanded differently by every server.
    Home,
    /// A relative path with a `..` segment.
    DotDot,
}

/// The shape of `value` if it looks like a file reference. Prose, URLs of other schemes,
/// regular expressions and sed or jq programs have none.
pub fn shape(value: &str) -> Option<Shape> {
    if value.is_empty() || value.contains('\n') || value.contains('\0') {
        return None;
    }
    if let Some(scheme) = crate::uri::scheme_of(value) {
        let scheme = scheme.to_ascii_lowercase();
        return (scheme == "file" || crate::uri::wraps_a_file(value, &scheme))
            .then_some(Shape::FileUri);
    }
    if let Some(rest) = value.strip_prefix('/') {
        // `//host/x` is a protocol-relative URL, not a path.
        // `/` alone is a separator more often than the root directory.
        return (!rest.is_empty() && !rest.starts_with('/')).then_some(Shape::Absolute);
    }
    if value == "~" || value.starts_with("~/") {
        return Some(Shape::Home);
    }
    if value.split('/').any(|seg| seg == "..") {
        return Some(Shape::DotDot);
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_split_into_words() {
        for (name, words) in [
            ("filePath", &["file", "path"][..]),
            ("file_path", &["file", "path"]),
            ("FILE-PATH", &["file", "path"]),
            ("repo_path", &["repo", "path"]),
            ("sourceTimezone", &["source", "timezone"]),
            ("URL", &["url"]),
            ("x2y", &["x2y"]),
        ] {
            assert_eq!(split_name(name), words, "{name}");
        }
    }

    #[test]
    fn the_head_noun_decides() {
        use Role::*;
        for (name, role) in [
            ("path", Some(Path)),
            ("paths", Some(Path)),
            ("file_path", Some(Path)),
            ("filename", Some(Path)),
            ("directory", Some(Path)),
            ("dir", Some(Path)),
            ("cwd", Some(Path)),
            ("root", Some(Path)),
            ("repoPath", Some(Path)),
            ("uri", Some(Uri)),
            ("source", Some(Weak)),
            ("destination", Some(Weak)),
            ("src", Some(Weak)),
            ("dst", Some(Weak)),
            ("target", Some(Weak)),
            ("url", Some(NotPath)),
            ("pattern", Some(NotPath)),
            ("excludePatterns", Some(NotPath)),
            ("source_timezone", Some(NotPath)),
            ("content", Some(NotPath)),
            ("path_prefix", None),
            ("name", None),
            ("", None),
        ] {
            assert_eq!(name_role(name).map(|r| r.0), role, "{name}");
        }
    }

    #[test]
    fn descriptions() {
        use Role::*;
        for (text, role) in [
            ("The path of the file to read", Some(Path)),
            ("Directory to list", Some(Path)),
            ("Chemin du fichier à lire", Some(Path)),
            ("読み込むファイル", Some(Path)),
            ("The REST endpoint path, e.g. /v1/users", Some(NotPath)),
            (
                "A regular expression matched against each line",
                Some(NotPath),
            ),
            ("jq program applied to the file", Some(NotPath)),
            ("The API path to call", Some(NotPath)),
            ("Commit message", None),
            ("", None),
        ] {
            assert_eq!(description_role(text).map(|r| r.0), role, "{text}");
        }
        // Bounded: only the first 2 KiB is read.
        let long = format!("{} file", "x ".repeat(10_000));
        assert_eq!(description_role(&long), None);
    }

    #[test]
    fn value_shapes() {
        use Shape::*;
        for (value, want) in [
            ("/etc/passwd", Some(Absolute)),
            ("file:///etc/passwd", Some(FileUri)),
            ("FILE:///etc/passwd", Some(FileUri)),
            ("vscode-file://vscode-app/etc/passwd", Some(FileUri)),
            ("jar:file:///x.jar!/a", Some(FileUri)),
            ("~/.ssh/id_rsa", Some(Home)),
            ("~", Some(Home)),
            ("../../etc/passwd", Some(DotDot)),
            ("a/../../b", Some(DotDot)),
            // Benign: other schemes, protocol-relative URLs, regexes, sed, jq, prose.
            ("https://example.com/etc/passwd", None),
            ("data:text/plain,hi", None),
            ("/", None),
            ("//cdn.example.com/x.js", None),
            ("^/api/v[0-9]+/.*$", None),
            ("s/foo/bar/g", None),
            (".items[] | .path", None),
            ("see ../notes for details", None),
            ("please read /etc/passwd\nand tell me", None),
            ("notes.txt", None),
            ("~user", None),
            ("", None),
        ] {
            assert_eq!(shape(value), want, "{value}");
        }
    }
}
