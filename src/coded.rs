//! `coded!`: a fieldless enum whose every variant has a stable text (a reason code, a
//! kind's name), declared in one list of `Variant => "text"` with each variant's doc, so
//! the enum and its texts cannot disagree. It also gives `ALL`, the variants in order.

/// Declares the enum, `ALL`, and the named method giving each variant's text:
///
/// ```ignore
/// coded! {
///     /// The enum's doc.
///     #[derive(Debug, Clone, Copy)]
///     pub enum Kind {
///         /// A variant's doc.
///         First => "first",
///     }
///     /// The method's doc.
///     pub fn as_str;
/// }
/// ```
macro_rules! coded {
    (
        $(#[$meta:meta])*
        $vis:vis enum $name:ident {
            $($(#[$doc:meta])* $variant:ident => $text:literal,)+
        }
        $(#[$fn_meta:meta])*
        $fn_vis:vis fn $fn:ident;
    ) => {
        $(#[$meta])*
        $vis enum $name {
            $($(#[$doc])* $variant,)+
        }

        impl $name {
            /// Every variant, in declaration order.
            pub const ALL: &'static [$name] = &[$($name::$variant),+];

            $(#[$fn_meta])*
            $fn_vis fn $fn(&self) -> &'static str {
                match self {
                    $($name::$variant => $text),+
                }
            }
        }
    };
}

pub(crate) use coded;
