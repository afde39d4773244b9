//! The one table of where URIs sit in MCP messages: for each message (methods, sender, part)
//! the JSON paths that carry URIs, the revisions they exist in, what a refusal does and
//! whether judging it waits for the roots. The enforcer routes from it (what it intercepts,
//! what waits, what has a text path, which result keys a method's own handler judges, which
//! method family's handler a message goes to and what it is within its family, [`Shape`]:
//! all of it one [`Route`] per message, computed once), and docs/enforcement.md's tables are
//! its rendering (its tests render it and compare the two), so the contract, the routing and
//! the code cannot drift apart.
//!
//! The routing the table replaced is kept in its tests as a specification: the table routes
//! every message exactly as those hand-written `match`es did.
//!
//! To add a URI position: add a row here, run the `mcp::uris` tests, paste the rendering
//! they print into docs/enforcement.md, and handle the row in the method's family handler
//! (`src/enforce/`; a new method also goes into its family in [`FAMILIES`]).

use super::Revisions;
use super::methods as m;
use crate::jsonrpc::Kind;

/// Who sends the message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Peer {
    /// The MCP host (the client).
    Host,
    /// The MCP server rootfence guards.
    Server,
}

crate::coded::coded! {
    /// Which part of an exchange.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub enum Part {
        /// A request's `params`.
        Request => "request",
        /// A response's `result`.
        Result => "result",
        /// An error response's `error`.
        Error => "error",
        /// A notification's `params`.
        Notification => "notification",
    }
    /// As docs/enforcement.md names it.
    pub fn word;
}

impl Part {
    /// The part a JSON-RPC message kind carries.
    pub fn of(kind: Kind) -> Part {
        match kind {
            Kind::Request => Part::Request,
            Kind::Response => Part::Result,
            Kind::ErrorResponse => Part::Error,
            Kind::Notification => Part::Notification,
        }
    }
}

crate::coded::coded! {
    /// The enforcer's method families: each has one handler in `src/enforce/`, which owns
    /// the family's state, and the enforcer dispatches a message on its family, who sent it
    /// and what it is.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub enum Family {
        /// The lifecycle: whether the host has roots, what the server says it is.
        Initialize => "initialize",
        /// Learning the host's roots, and answering the server's questions about them.
        Roots => "roots",
        /// `resources/read`: the request's URI, the result's contents.
        ResourcesRead => "resources read",
        /// The resource list, page by page.
        List => "list",
        /// The resource templates.
        Templates => "templates",
        /// Resource subscriptions and their updates.
        Subscriptions => "subscriptions",
        /// The tools: their list (which teaches their path arguments) and their calls.
        Tools => "tools",
        /// The prompts: their list and the prompts got.
        Prompts => "prompts",
        /// Tasks (2025-11-25): a task's deferred result.
        Tasks => "tasks",
        /// The server's sampling requests and the host's answers.
        Sampling => "sampling",
        /// The server's elicitation requests.
        Elicitation => "elicitation",
        /// Argument completion for a resource template.
        Completion => "completion",
        /// Everything else: only the rows that cover every method apply (free-form
        /// fields).
        #[default]
        FreeForm => "free-form",
    }
    /// As docs/enforcement.md names it.
    pub fn word;
}

/// What a message is within its family, as the table says it (a row's column): a family's
/// handler tells its own messages apart by this, never by their method.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Shape {
    /// Nothing beyond its family.
    #[default]
    Plain,
    /// A list result: its entries under `key`, each entry's URI under `uri` (`""`: none).
    Entries {
        /// The result key of the list.
        key: &'static str,
        /// The key of each entry's URI or URI template (`""` when entries have none).
        uri: &'static str,
    },
    /// A result of content blocks and prompt messages (`content[]`, `messages[]`).
    Content,
    /// The result that opens the session: what the server says it is is recorded.
    Opens,
    /// A subscription to one URI, remembered.
    Subscribe,
    /// The end of a subscription to one URI.
    Unsubscribe,
    /// A list of URIs listened to (2026-07-28), remembered as subscribed.
    Listen,
}

/// Every method's family (a method rootfence does not know is free-form). A message goes to
/// its method's family only when a row names its method for its sender and part; any other
/// message is free-form ([`route`]).
pub const FAMILIES: &[(Family, &[&str])] = &[
    (Family::Initialize, &[m::INITIALIZE, m::SERVER_DISCOVER]),
    (
        Family::Roots,
        &[m::ROOTS_LIST, m::ROOTS_LIST_CHANGED, m::INITIALIZED],
    ),
    (Family::ResourcesRead, &[m::RESOURCES_READ]),
    (
        Family::List,
        &[m::RESOURCES_LIST, m::RESOURCES_LIST_CHANGED],
    ),
    (Family::Templates, &[m::RESOURCES_TEMPLATES_LIST]),
    (
        Family::Subscriptions,
        &[
            m::RESOURCES_SUBSCRIBE,
            m::RESOURCES_UNSUBSCRIBE,
            m::SUBSCRIPTIONS_LISTEN,
            m::RESOURCES_UPDATED,
        ],
    ),
    (
        Family::Tools,
        &[m::TOOLS_LIST, m::TOOLS_CALL, m::TOOLS_LIST_CHANGED],
    ),
    (
        Family::Prompts,
        &[m::PROMPTS_LIST, m::PROMPTS_GET, m::PROMPTS_LIST_CHANGED],
    ),
    (
        Family::Tasks,
        &[m::TASKS_RESULT, m::TASKS_GET, m::TASKS_LIST],
    ),
    (Family::Sampling, &[m::SAMPLING_CREATE_MESSAGE]),
    (Family::Elicitation, &[m::ELICITATION_CREATE]),
    (Family::Completion, &[m::COMPLETION_COMPLETE]),
    (
        Family::FreeForm,
        &[
            m::PING,
            m::CANCELLED,
            m::PROGRESS,
            m::LOGGING_MESSAGE,
            m::LOGGING_SET_LEVEL,
        ],
    ),
];

/// The family of a method (free-form when rootfence does not know it).
pub fn family(method: &str) -> Family {
    FAMILIES
        .iter()
        .find(|(_, methods)| methods.contains(&method))
        .map_or(Family::FreeForm, |(family, _)| *family)
}

/// One row: where URIs sit in one kind of message, and what rootfence does with them.
#[derive(Debug)]
pub struct Position {
    /// The methods (a response's method is its request's); empty for every method.
    pub methods: &'static [&'static str],
    /// Who sends the message.
    pub sender: Peer,
    /// The parts of the exchange the paths are in.
    pub parts: &'static [Part],
    /// The JSON paths (relative to the part), as the documentation words them.
    pub paths: &'static str,
    /// The revisions the paths exist in.
    pub revisions: Revisions,
    /// What a refusal does.
    pub refusal: &'static str,
    /// Judging it waits while rootfence is asking the host for its roots (the roots
    /// handshake itself never waits).
    pub waits_for_roots: bool,
    /// The enforcer can judge it from its text, without a parse to a value tree.
    pub text_path: bool,
    /// The result keys the method's own handler judges (besides a list's, [`Shape::Entries`]):
    /// the free-form walk skips them.
    pub owns: &'static [&'static str],
    /// What the message is within its family, for its handler.
    pub shape: Shape,
}

const REQ: &[Part] = &[Part::Request];
const RES: &[Part] = &[Part::Result];
const NOTE: &[Part] = &[Part::Notification];
const ERR: &[Part] = &[Part::Error];
/// What a server sends in answer or unprompted.
const ANSWERS: &[Part] = &[Part::Result, Part::Error, Part::Notification];

/// A row with the defaults of most: every revision, waits for the roots, no text path,
/// owns nothing.
const fn row(
    methods: &'static [&'static str],
    sender: Peer,
    parts: &'static [Part],
    paths: &'static str,
    refusal: &'static str,
) -> Position {
    Position {
        methods,
        sender,
        parts,
        paths,
        revisions: Revisions::All,
        refusal,
        waits_for_roots: true,
        text_path: false,
        owns: &[],
        shape: Shape::Plain,
    }
}

const fn since(mut p: Position, revisions: Revisions) -> Position {
    p.revisions = revisions;
    p
}

const fn owning(mut p: Position, keys: &'static [&'static str]) -> Position {
    p.owns = keys;
    p
}

const fn shaped(mut p: Position, shape: Shape) -> Position {
    p.shape = shape;
    p
}

/// A list result's row: entries under `key` (which the list's handler judges), each entry's
/// URI under `uri` (`""`: none).
const fn entries(p: Position, key: &'static str, uri: &'static str) -> Position {
    shaped(p, Shape::Entries { key, uri })
}

/// A content result's row (`content[]`, `messages[]`): it owns `keys`.
const fn content(p: Position, keys: &'static [&'static str]) -> Position {
    shaped(owning(p, keys), Shape::Content)
}

const fn texted(mut p: Position) -> Position {
    p.text_path = true;
    p
}

const fn at_once(mut p: Position) -> Position {
    p.waits_for_roots = false;
    p
}

/// The methods whose results may come back `input_required` (2026-07-28) and whose content
/// blocks rootfence filters.
const CONTENT: &[&str] = &[m::TOOLS_CALL, m::TASKS_RESULT, m::PROMPTS_GET];
/// The requests a 2026-07-28 host retries with `inputResponses`, and whose results may be
/// `input_required`.
const MRTR: &[&str] = &[
    m::TOOLS_CALL,
    m::TASKS_RESULT,
    m::PROMPTS_GET,
    m::RESOURCES_READ,
];
/// The requests a 2026-07-28 host that has roots rootfence does not know yet is asked
/// for them first (answered `input_required` with a `roots/list` question): the ones whose
/// judging needs the roots and whose answer may be `input_required`.
pub const ASKS_FOR_ROOTS_FIRST: &[&str] = &[m::PROMPTS_GET, m::TOOLS_CALL, m::RESOURCES_READ];
const SINCE_2025_11_25: Revisions = Revisions::Since("2025-11-25");
const SINCE_2026_07_28: Revisions = Revisions::Since("2026-07-28");

/// Every position, in the order docs/enforcement.md lists them.
pub const POSITIONS: &[Position] = &[
    texted(row(
        &[m::RESOURCES_READ],
        Peer::Host,
        REQ,
        "`params.uri`",
        "the request is answered with the denial error; the server never sees it",
    )),
    texted(owning(
        row(
            &[m::RESOURCES_READ],
            Peer::Server,
            RES,
            "`contents[].uri`",
            "the item is removed; if none is left, the host gets the denial error",
        ),
        &["contents"],
    )),
    row(
        &[m::RESOURCES_READ],
        Peer::Server,
        RES,
        "`contents[]` items over `resources.max_bytes` or outside `resources.mime`",
        "the item is removed (`too_large`, `mime_denied`). The size is the item's largest \
         representation: `text`, decoded `blob`, and `data` (which a lenient host may read \
         too); an item whose `blob`/`data` is not base64, or whose `text` is not a string, is \
         removed (`not_base64`, `malformed_content`)",
    ),
    texted(entries(
        row(
            &[m::RESOURCES_LIST],
            Peer::Server,
            RES,
            "`resources[].uri` (every page; cursors untouched), and each entry's `icons` and \
             free-form fields",
            "the entry is removed",
        ),
        "resources",
        "uri",
    )),
    entries(
        row(
            &[m::RESOURCES_TEMPLATES_LIST],
            Peer::Server,
            RES,
            "`resourceTemplates[].uriTemplate`, and each entry's `icons` and free-form fields",
            "removed when every expansion must leave the roots: judged by its literal prefix \
             and the operator that follows it (`{/x}` closes the last name; `{x}`, `{+x}`, \
             `{.x}` continue it, so `file:///srv/root_evil{/x}` and `file:///srv/ro{x}` are \
             judged by what those names can reach; `{?x}`, `{&x}`, `{#x}` give a query or \
             fragment, which a `file:` URI may not have); any expansion is checked again at \
             read time",
        ),
        "resourceTemplates",
        "uriTemplate",
    ),
    entries(
        row(
            &[m::TOOLS_LIST],
            Peer::Server,
            RES,
            "`tools[]`: each entry's `icons` and free-form fields; the tools' input schemas \
             teach their path arguments",
            "the icon or the free-form object is removed (below)",
        ),
        "tools",
        "",
    ),
    entries(
        row(
            &[m::PROMPTS_LIST],
            Peer::Server,
            RES,
            "`prompts[]`: each entry's `icons` and free-form fields",
            "the icon or the free-form object is removed (below)",
        ),
        "prompts",
        "",
    ),
    since(
        shaped(
            row(
                &[m::RESOURCES_SUBSCRIBE],
                Peer::Host,
                REQ,
                "`params.uri`",
                "denial error (an allowed URI is remembered as subscribed)",
            ),
            Shape::Subscribe,
        ),
        Revisions::Until("2025-11-25"),
    ),
    since(
        shaped(
            row(
                &[m::RESOURCES_UNSUBSCRIBE],
                Peer::Host,
                REQ,
                "`params.uri`",
                "denial error (an allowed URI is no longer subscribed)",
            ),
            Shape::Unsubscribe,
        ),
        Revisions::Until("2025-11-25"),
    ),
    since(
        shaped(
            row(
                &[m::SUBSCRIPTIONS_LISTEN],
                Peer::Host,
                REQ,
                "`params.notifications.resourceSubscriptions[]`",
                "the URI is removed from the list (the kept ones are remembered as subscribed)",
            ),
            Shape::Listen,
        ),
        SINCE_2026_07_28,
    ),
    row(
        &[m::RESOURCES_UPDATED],
        Peer::Server,
        NOTE,
        "`params.uri`",
        "the notification is dropped; also dropped when the URI was never subscribed (nor is \
         inside a subscribed `file:` URI)",
    ),
    row(
        &[m::TOOLS_LIST_CHANGED],
        Peer::Server,
        NOTE,
        "none: the path arguments learned from `tools/list` are forgotten until the next one",
        "as for free-form fields",
    ),
    row(
        &[m::COMPLETION_COMPLETE],
        Peer::Host,
        REQ,
        "`params.ref.uri` when `ref.type = \"ref/resource\"`",
        "denial error (a template is judged like a listed template)",
    ),
    row(
        &[m::COMPLETION_COMPLETE],
        Peer::Server,
        RES,
        "`completion.values[]` when the request's `ref` is a `file:` template",
        "each value is judged by the URI the template expands to with it (RFC 6570, as the \
         host would expand it); one that leaves the roots is removed (`../secret`), a value \
         that is not a string too (`not_a_string`)",
    ),
    row(
        &[m::TOOLS_CALL],
        Peer::Host,
        REQ,
        "`params.name`",
        "tool error (see below; `tool_denied`, `read_only`)",
    ),
    row(
        &[m::TOOLS_CALL],
        Peer::Host,
        REQ,
        "`params.arguments` at the policy's `[[tools.paths]]` pointers whose `server` matches \
         the server's `serverInfo.name` (or every entry while the name is unknown)",
        "tool error (see below); an allowed path or URI is forwarded in canonical form",
    ),
    row(
        &[m::TOOLS_CALL],
        Peer::Host,
        REQ,
        "`params.arguments`: every other string, as the tool's own schema says (learned from \
         `tools/list`, `tools.infer`; see below)",
        "tool error (see below); an allowed absolute path or URI of a path argument is \
         forwarded in canonical form, everything else as sent",
    ),
    content(
        row(
            CONTENT,
            Peer::Server,
            RES,
            "`content[]` blocks: **every** URI position of a block, `resource.uri` and `uri` \
             both, whatever its `type` says (`{type:\"resource_link\", uri, resource:{…}}` is \
             judged by both; resource links exist from 2025-06-18); a block's own nested \
             `content` (`tool_result`, or any block) is filtered the same way, recursively",
            "the block is removed if any position is refused; a `resource` object without a \
             URI is refused (`missing_uri`)",
        ),
        &["content"],
    ),
    content(
        row(
            CONTENT,
            Peer::Server,
            RES,
            "`messages[].content` (the same blocks)",
            "the message is removed",
        ),
        &["messages"],
    ),
    since(
        row(
            ASKS_FOR_ROOTS_FIRST,
            Peer::Host,
            REQ,
            "none of its own until the roots are known: a host that has roots rootfence does \
             not know yet is asked for them first",
            "the request is answered `input_required` with a `roots/list` question",
        ),
        SINCE_2026_07_28,
    ),
    row(
        &[m::SAMPLING_CREATE_MESSAGE],
        Peer::Server,
        REQ,
        "`params.messages[].content` (blocks, arrays, and `tool_result.content[]`, 2025-11-25), \
         and the rest of `params` as free-form fields",
        "the block is removed",
    ),
    row(
        &[m::SAMPLING_CREATE_MESSAGE],
        Peer::Host,
        RES,
        "`content` (a block or an array of blocks)",
        "the block is removed; a single block refused: the server gets the denial error",
    ),
    since(
        owning(
            row(
                MRTR,
                Peer::Server,
                RES,
                "`input_required` `inputRequests[k]` with `method: \"sampling/createMessage\"`: \
                 `params.messages[].content`",
                "the block is removed",
            ),
            &["inputRequests"],
        ),
        SINCE_2026_07_28,
    ),
    since(
        owning(
            row(
                MRTR,
                Peer::Server,
                RES,
                "`input_required` `inputRequests[k]` with `method: \"elicitation/create\"` and a \
                 `params.url`",
                "judged like `elicitation/create` `params.url`; a refused entry is taken out of \
                 `inputRequests`",
            ),
            &["inputRequests"],
        ),
        SINCE_2026_07_28,
    ),
    since(
        row(
            &[m::ELICITATION_CREATE],
            Peer::Server,
            REQ,
            "`params.url` (URL mode), and the rest of `params` as free-form fields",
            "a URL that names a local file (below) and is refused: the request is refused to \
             the server with the denial error, the host never sees it",
        ),
        SINCE_2025_11_25,
    ),
    since(
        row(
            &[],
            Peer::Server,
            ERR,
            "error `-32042` `error.data.elicitations[].url`",
            "the same judgement; a refused entry is removed from the list",
        ),
        SINCE_2025_11_25,
    ),
    since(
        row(
            &[],
            Peer::Server,
            ANSWERS,
            "`icons[].src` anywhere (listed resources, templates, tools, prompts, content \
             blocks, `serverInfo`, 2026-07-28 `_meta` serverInfo)",
            "an icon whose `src` names a local file (below) is judged like any URI and removed \
             if refused; a **relative** `src` is removed (`relative_url`: a desktop host \
             resolves it against its own `file:` page); other schemes are the host's to judge",
        ),
        SINCE_2025_11_25,
    ),
    row(
        &[],
        Peer::Server,
        ANSWERS,
        "`serverInfo.websiteUrl` (2025-11-25+), and any `url` / `resourceUri` (MCP Apps \
         `_meta.ui.resourceUri`) / `websiteUrl` key in the free-form fields below",
        "a link that names a local file and is refused: the key is removed",
    ),
    row(
        &[],
        Peer::Server,
        ANSWERS,
        "**free-form fields**: every other part of every server result (`structuredContent` \
         2025-06-18+, `_meta`, `tasks/get`/`tasks/list` results, `annotations`, list \
         entries' `_meta`, …), `error.data` of every server error response (answers to \
         allowed requests), the `params` of every server notification (`notifications/message` \
         log `data`, `notifications/progress`, task status, …)",
        "walked recursively: an object whose `uri`, `resource.uri` or `uriTemplate` names a \
         **local file** (below) that is refused is removed from its parent (taking its text \
         with it); relative or other-scheme names in free-form data are the tool's own data \
         and pass. A log message left without `data` is dropped. Free text is not judged \
         here: the content tripwire covers it",
    ),
    row(
        &[],
        Peer::Server,
        ANSWERS,
        "`_meta[\"io.rootfence/…\"]` in anything the server sends",
        "removed: only rootfence speaks for rootfence (its tool errors carry \
         `io.rootfence/denial`)",
    ),
    row(
        &[
            m::RESOURCES_READ,
            m::RESOURCES_LIST,
            m::RESOURCES_TEMPLATES_LIST,
            m::TOOLS_LIST,
            m::PROMPTS_LIST,
            m::TOOLS_CALL,
            m::TASKS_RESULT,
            m::PROMPTS_GET,
        ],
        Peer::Server,
        RES,
        "`contents`, `resources`, `resourceTemplates`, `tools`, `prompts`, `messages` or \
         `content` that is not the shape it must be (an object instead of an array)",
        "the whole result is replaced by the denial error (`malformed_result`): it cannot be \
         checked item by item",
    ),
    // The roots handshake: never waits (it is what the others wait for).
    at_once(row(
        &[m::INITIALIZE],
        Peer::Host,
        REQ,
        "`params.capabilities.roots`: whether the host has roots",
        "none: rootfence asks the host for its roots",
    )),
    at_once(row(
        &[m::INITIALIZED, m::ROOTS_LIST_CHANGED],
        Peer::Host,
        NOTE,
        "none: the host's roots are asked for again",
        "none",
    )),
    at_once(row(
        &[m::ROOTS_LIST],
        Peer::Server,
        REQ,
        "none: a host without roots cannot answer it",
        "rootfence answers with the operator roots, or an error when there are none",
    )),
    at_once(row(
        &[m::ROOTS_LIST],
        Peer::Host,
        RES,
        "`roots[].uri` (host → server), and `roots/list` answers inside a 2026-07-28 \
         request's `params.inputResponses`",
        "replaced by the effective roots",
    )),
    at_once(shaped(
        row(
            &[m::INITIALIZE],
            Peer::Server,
            &[Part::Result, Part::Error],
            "`serverInfo` (`icons`, `websiteUrl`) and the rest, as free-form fields; what the \
             server says it is goes on the `initialized` record",
            "as for free-form fields",
        ),
        Shape::Opens,
    )),
    at_once(row(
        &[m::SERVER_DISCOVER],
        Peer::Server,
        &[Part::Result, Part::Error],
        "`serverInfo` (`icons`, `websiteUrl`) and the rest, as free-form fields",
        "as for free-form fields",
    )),
];

/// What the table says of one kind of message, looked up once per message by the relay's
/// hot path ([`route`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Route {
    /// The enforcer looks at it at all: a row names it, or covers every method for its
    /// sender and part.
    pub intercepted: bool,
    /// Judging it waits for the roots while rootfence asks for them. Everything waits but
    /// the roots handshake: a method a handshake row names never waits, whoever sends it (a
    /// server that sends `notifications/initialized` is not asked to wait for anything).
    pub waits_for_roots: bool,
    /// The enforcer has a text path for it: a row that names it says so.
    pub text_path: bool,
    /// For a server result, the keys its family's handler judges (the free-form walk skips
    /// them), in table order: what the rows that name its method own, and their lists'.
    pub result_keys: Vec<&'static str>,
    /// The family whose handler judges it: its method's, when a row names the method for
    /// its sender and part; otherwise free-form (only the rows for every method apply, so a
    /// server notification named `tools/call` is walked, never taken for a call).
    pub family: Family,
    /// What it is within its family: the shape of the first row that names its method for
    /// its sender and part and gives one ([`Shape::Plain`] when none does).
    pub shape: Shape,
}

/// The routes of every known method, by its place in [`super::methods::ALL`] (one more
/// entry, last, for every method the table does not know), then by [`slot`] (sender and
/// part), computed once.
type Routes = Vec<[Route; 8]>;

fn slot(sender: Peer, part: Part) -> usize {
    (sender as usize) << 2 | part as usize
}

fn routes() -> &'static Routes {
    static ROUTES: std::sync::OnceLock<Routes> = std::sync::OnceLock::new();
    ROUTES.get_or_init(|| {
        // A method no row names (the empty name) stands for every unknown one: a row that
        // covers every method of its sender and part is all that can apply to it.
        let names = super::methods::ALL.iter().copied().chain([""]);
        names
            .map(|method| {
                let mut slots: [Route; 8] = Default::default();
                for sender in [Peer::Host, Peer::Server] {
                    for part in [Part::Request, Part::Result, Part::Error, Part::Notification] {
                        slots[slot(sender, part)] = compute(sender, part, method);
                    }
                }
                slots
            })
            .collect()
    })
}

/// One pass over the rows for one kind of message (see [`Route`]'s fields for what each
/// fact means).
fn compute(sender: Peer, part: Part, method: &str) -> Route {
    let mut route = Route {
        waits_for_roots: true,
        ..Route::default()
    };
    for p in POSITIONS {
        // The row names the method (not as one of every method).
        let named = p.methods.contains(&method);
        if named && !p.waits_for_roots {
            route.waits_for_roots = false;
        }
        if p.sender != sender || !p.parts.contains(&part) {
            continue;
        }
        route.intercepted |= named || p.methods.is_empty();
        if !named {
            continue;
        }
        route.family = family(method);
        route.text_path |= p.text_path;
        if route.shape == Shape::Plain {
            route.shape = p.shape;
        }
        if (sender, part) == (Peer::Server, Part::Result) {
            let listed = match p.shape {
                Shape::Entries { key, .. } => Some(key),
                _ => None,
            };
            for key in listed.into_iter().chain(p.owns.iter().copied()) {
                if !route.result_keys.contains(&key) {
                    route.result_keys.push(key);
                }
            }
        }
    }
    route
}

/// What the table says of a message: the method's place found by a `match`
/// ([`super::methods::index`]), then two array indexes; a method the table does not know is
/// routed like every other message of its sender and part. Nothing is hashed or allocated.
pub fn route(sender: Peer, part: Part, method: &str) -> &'static Route {
    let routes = routes();
    let row = super::methods::index(method).unwrap_or(routes.len() - 1);
    &routes[row][slot(sender, part)]
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The table as docs/enforcement.md shows it (a Markdown table, one line per row).
    fn render() -> String {
        let mut out = String::from(
            "| message | where (JSON path) | revisions | on deny | waits for the roots |\n\
             |---|---|---|---|---|\n",
        );
        for p in POSITIONS {
            let methods = if p.methods.is_empty() {
                "every".to_owned()
            } else {
                p.methods
                    .iter()
                    .map(|m| format!("`{m}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            let parts = p
                .parts
                .iter()
                .map(|p| p.word())
                .collect::<Vec<_>>()
                .join(", ");
            let sender = match p.sender {
                Peer::Host => "host",
                Peer::Server => "server",
            };
            out.push_str(&format!(
                "| {methods} {parts} ({sender}) | {} | {} | {} | {} |\n",
                p.paths,
                match p.revisions {
                    Revisions::All => "all".to_owned(),
                    Revisions::Since(s) => format!("{s}+"),
                    Revisions::Until(s) => format!("up to {s}"),
                },
                p.refusal,
                if p.waits_for_roots { "yes" } else { "no" },
            ));
        }
        out
    }

    /// The families and their methods as docs/enforcement.md shows them.
    fn render_families() -> String {
        let mut out = String::from("| family | methods |\n|---|---|\n");
        for (family, methods) in FAMILIES {
            let mut names = methods
                .iter()
                .map(|m| format!("`{m}`"))
                .collect::<Vec<_>>()
                .join(", ");
            if *family == Family::FreeForm {
                names.push_str(", and every method not listed here");
            }
            out.push_str(&format!("| {} | {names} |\n", family.word()));
        }
        out
    }

    /// Where docs/enforcement.md holds the renderings.
    const BEGIN: &str = "<!-- uri-table: rendered from src/mcp/uris.rs; a test compares -->\n";
    const END: &str = "<!-- /uri-table -->";
    const FAMILY_BEGIN: &str =
        "<!-- family-table: rendered from src/mcp/uris.rs; a test compares -->\n";
    const FAMILY_END: &str = "<!-- /family-table -->";

    /// Fails unless docs/enforcement.md holds `rendered` between `begin` and `end`.
    fn documented(begin: &str, end: &str, rendered: &str) {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/enforcement.md");
        let doc = std::fs::read_to_string(&path).expect("docs/enforcement.md is readable");
        let start = doc.find(begin).map(|i| i + begin.len());
        let stop = doc.find(end);
        let (Some(start), Some(stop)) = (start, stop) else {
            panic!(
                "docs/enforcement.md has no `{}` … `{end}` section; put this table between \
                 them:\n{rendered}",
                begin.trim_end()
            );
        };
        assert!(
            doc[start..stop] == *rendered,
            "docs/enforcement.md's table `{}` differs from src/mcp/uris.rs; replace it \
             with:\n{rendered}",
            begin.trim_end()
        );
    }

    #[test]
    fn the_documented_table_is_the_rendering_of_the_code_table() {
        documented(BEGIN, END, &render());
    }

    #[test]
    fn the_documented_families_are_the_rendering_of_the_code_families() {
        documented(FAMILY_BEGIN, FAMILY_END, &render_families());
    }

    #[test]
    fn every_method_the_table_routes_names_exactly_one_family() {
        let named = |method: &str| {
            FAMILIES
                .iter()
                .filter(|(_, methods)| methods.contains(&method))
                .count()
        };
        for method in m::ALL {
            assert_eq!(named(method), 1, "{method}");
        }
        for p in POSITIONS {
            for method in p.methods {
                assert_eq!(named(method), 1, "{method}");
                // Free-form is what no row names: a named method has a handler of its own.
                assert_ne!(family(method), Family::FreeForm, "{method}");
            }
        }
        assert_eq!(family("x/unknown"), Family::FreeForm);
    }

    #[test]
    fn a_message_no_row_names_is_free_form_whatever_its_method() {
        use Part::*;
        use Peer::*;
        for (sender, part, method, expected) in [
            (Host, Request, m::RESOURCES_READ, Family::ResourcesRead),
            (Server, Result, m::RESOURCES_READ, Family::ResourcesRead),
            (
                Server,
                Notification,
                m::RESOURCES_UPDATED,
                Family::Subscriptions,
            ),
            (Server, Notification, m::TOOLS_LIST_CHANGED, Family::Tools),
            (Server, Result, m::INITIALIZE, Family::Initialize),
            (Host, Request, m::INITIALIZE, Family::Initialize),
            (Host, Request, m::SERVER_DISCOVER, Family::FreeForm),
            (Server, Notification, m::TOOLS_CALL, Family::FreeForm),
            (
                Server,
                Notification,
                m::RESOURCES_SUBSCRIBE,
                Family::FreeForm,
            ),
            (Server, Result, m::TASKS_GET, Family::FreeForm),
            (Server, Result, m::TASKS_RESULT, Family::Tasks),
            (Server, Result, "x/unknown", Family::FreeForm),
        ] {
            assert_eq!(route(sender, part, method).family, expected, "{method}");
        }
    }

    #[test]
    fn every_row_names_known_methods_and_no_pipe_breaks_the_markdown() {
        for p in POSITIONS {
            for method in p.methods {
                assert!(m::ALL.contains(method), "{method}");
            }
            assert!(!p.parts.is_empty(), "{p:?}");
            for text in [p.paths, p.refusal] {
                assert!(!text.contains('|') && !text.contains('\n'), "{text}");
            }
        }
    }

    #[test]
    fn the_roots_handshake_never_waits_for_the_roots() {
        use Part::*;
        use Peer::*;
        for (sender, part, method) in [
            (Host, Request, m::INITIALIZE),
            (Host, Notification, m::INITIALIZED),
            (Host, Notification, m::ROOTS_LIST_CHANGED),
            (Host, Result, m::ROOTS_LIST),
            (Server, Request, m::ROOTS_LIST),
            (Server, Result, m::INITIALIZE),
            (Server, Error, m::SERVER_DISCOVER),
        ] {
            let r = route(sender, part, method);
            assert!(r.intercepted && !r.waits_for_roots, "{method}");
        }
        for method in [m::RESOURCES_READ, m::LOGGING_MESSAGE, "x/unknown"] {
            assert!(route(Peer::Server, Part::Result, method).waits_for_roots);
        }
    }

    /// The routing the table replaced (the hand-written `match`es of `enforce/mod.rs`
    /// before issue 25), kept as the specification the table must reproduce exactly.
    fn routed_before(sender: Peer, part: Part, method: &str) -> (bool, bool, bool) {
        use Part::*;
        use Peer::*;
        let wanted = match (sender, part) {
            (Host, Request) => matches!(
                method,
                m::INITIALIZE
                    | m::RESOURCES_READ
                    | m::RESOURCES_SUBSCRIBE
                    | m::RESOURCES_UNSUBSCRIBE
                    | m::SUBSCRIPTIONS_LISTEN
                    | m::COMPLETION_COMPLETE
                    | m::TOOLS_CALL
                    | m::PROMPTS_GET
            ),
            (Host, Notification) => matches!(method, m::INITIALIZED | m::ROOTS_LIST_CHANGED),
            (Host, Result) => matches!(method, m::ROOTS_LIST | m::SAMPLING_CREATE_MESSAGE),
            (Server, Request) => matches!(
                method,
                m::ROOTS_LIST | m::SAMPLING_CREATE_MESSAGE | m::ELICITATION_CREATE
            ),
            (Server, Notification | Result | Error) => true,
            _ => false,
        };
        let waits = !matches!(
            method,
            m::INITIALIZE
                | m::INITIALIZED
                | m::ROOTS_LIST
                | m::ROOTS_LIST_CHANGED
                | m::SERVER_DISCOVER
        );
        let text = matches!(
            (sender, part, method),
            (Server, Result, m::RESOURCES_LIST | m::RESOURCES_READ)
                | (Host, Request, m::RESOURCES_READ)
        );
        (wanted, waits, text)
    }

    #[test]
    fn the_table_routes_every_message_as_the_matches_it_replaced() {
        for method in m::ALL.iter().copied().chain(["x/unknown", ""]) {
            for sender in [Peer::Host, Peer::Server] {
                for part in [Part::Request, Part::Result, Part::Error, Part::Notification] {
                    let r = route(sender, part, method);
                    let now = (r.intercepted, r.waits_for_roots, r.text_path);
                    assert_eq!(
                        now,
                        routed_before(sender, part, method),
                        "{sender:?} {part:?} {method}"
                    );
                }
            }
        }
        let handled_before = |method: &str| -> &[&str] {
            match method {
                m::RESOURCES_LIST => &["resources"],
                m::RESOURCES_TEMPLATES_LIST => &["resourceTemplates"],
                m::TOOLS_LIST => &["tools"],
                m::PROMPTS_LIST => &["prompts"],
                m::TOOLS_CALL | m::TASKS_RESULT | m::PROMPTS_GET => {
                    &["content", "messages", "inputRequests"]
                }
                m::RESOURCES_READ => &["contents", "inputRequests"],
                _ => &[],
            }
        };
        for method in m::ALL {
            assert_eq!(result_keys(method), handled_before(method), "{method}");
        }
    }

    #[test]
    fn the_precomputed_routes_are_the_tables() {
        for method in m::ALL.iter().copied().chain(["x/unknown"]) {
            for sender in [Peer::Host, Peer::Server] {
                for part in [Part::Request, Part::Result, Part::Error, Part::Notification] {
                    // The precomputed route is found by the method's index and the slot.
                    assert_eq!(*route(sender, part, method), compute(sender, part, method));
                }
            }
        }
        assert_eq!(
            route(Peer::Server, Part::Result, m::RESOURCES_READ).result_keys,
            ["contents", "inputRequests"]
        );
    }

    /// What the handlers told apart by method before the shape column (the `match` on
    /// family and method of the former `enforce/results.rs`, subscriptions' and initialize's method
    /// tests), kept as the specification the shapes must reproduce.
    fn shaped_before(sender: Peer, part: Part, method: &str) -> Shape {
        use Part::*;
        use Peer::*;
        let entries = |key, uri| Shape::Entries { key, uri };
        match (sender, part, method) {
            (Server, Result, m::RESOURCES_LIST) => entries("resources", "uri"),
            (Server, Result, m::RESOURCES_TEMPLATES_LIST) => {
                entries("resourceTemplates", "uriTemplate")
            }
            (Server, Result, m::TOOLS_LIST) => entries("tools", ""),
            (Server, Result, m::PROMPTS_LIST) => entries("prompts", ""),
            (Server, Result, m::TOOLS_CALL | m::PROMPTS_GET | m::TASKS_RESULT) => Shape::Content,
            (Server, Result | Error, m::INITIALIZE) => Shape::Opens,
            (Host, Request, m::RESOURCES_SUBSCRIBE) => Shape::Subscribe,
            (Host, Request, m::RESOURCES_UNSUBSCRIBE) => Shape::Unsubscribe,
            (Host, Request, m::SUBSCRIPTIONS_LISTEN) => Shape::Listen,
            _ => Shape::Plain,
        }
    }

    #[test]
    fn each_message_has_the_shape_its_handler_told_apart_by_method() {
        for method in m::ALL.iter().copied().chain(["x/unknown"]) {
            for sender in [Peer::Host, Peer::Server] {
                for part in [Part::Request, Part::Result, Part::Error, Part::Notification] {
                    let expected = shaped_before(sender, part, method);
                    assert_eq!(route(sender, part, method).shape, expected, "{method}");
                }
            }
        }
    }

    /// The keys of a server result `method`'s handler judges.
    fn result_keys(method: &str) -> Vec<&'static str> {
        route(Peer::Server, Part::Result, method)
            .result_keys
            .clone()
    }

    #[test]
    fn result_keys_are_what_each_handler_judges() {
        assert_eq!(result_keys(m::RESOURCES_LIST), ["resources"]);
        assert_eq!(result_keys(m::TOOLS_LIST), ["tools"]);
        assert_eq!(
            result_keys(m::TOOLS_CALL),
            ["content", "messages", "inputRequests"]
        );
        assert_eq!(
            result_keys(m::RESOURCES_READ),
            ["contents", "inputRequests"]
        );
        assert!(result_keys(m::INITIALIZE).is_empty());
    }
}
