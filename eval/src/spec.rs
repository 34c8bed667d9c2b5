//! Strategy specs: the short strings `folio eval --strategy` takes, such as `fixed:500/80`,
//! `structure:500`, `parent-child:1200/300`, `window:300/1` or `lc=external:out/lc.jsonl`.
//! A size ending in `t` counts tokens (`structure:256t`, `parent-child:1024t/256t`): those of
//! the index's embedder ([`SizeUnit::Embedder`]) unless [`ChunkSpec::in_tokens_of`] names
//! another counter. Parents and structure-aware children share one unit.

use std::fmt;
use std::path::PathBuf;

use folio::chunk::{ChildStrategy, ChunkSpec, ParentStrategy, SizeUnit};
use folio::query::Expand;

/// One chunking strategy under evaluation.
#[derive(Debug, Clone, PartialEq)]
pub struct Strategy {
    /// The label in tables: the `name=` prefix, or the spec itself.
    pub label: String,
    /// How it cuts documents.
    pub kind: StrategyKind,
}

/// How a strategy cuts documents.
#[derive(Debug, Clone, PartialEq)]
pub enum StrategyKind {
    /// folio's own chunker with this spec, searched with this expansion.
    Builtin {
        /// The chunking.
        spec: ChunkSpec,
        /// What a search returns around its matches.
        expand: Expand,
    },
    /// Chunks cut by another tool, read from a JSON Lines file (byte offsets); every chunk is
    /// its own reading unit.
    External {
        /// The chunks file.
        path: PathBuf,
    },
}

/// Why a strategy spec was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("strategy `{spec}`: {reason}")]
pub struct SpecError {
    /// The spec as given.
    pub spec: String,
    /// What is wrong with it.
    pub reason: String,
}

const GRAMMAR: &str = "expected fixed:SIZE[/OVERLAP], structure:SIZE[/OVERLAP], \
parent-child:PARENT/CHILD (PARENT a size or `section`), window:SIZE/N or external:FILE, \
optionally prefixed by NAME=; a SIZE ending in `t` counts tokens";

impl Strategy {
    /// Parses a spec; see the module documentation for the forms.
    pub fn parse(input: &str) -> Result<Strategy, SpecError> {
        let fail = |reason: String| SpecError {
            spec: input.to_string(),
            reason,
        };
        let (label, spec) = match input.split_once('=') {
            Some((name, spec)) if !name.trim().is_empty() => (name.trim(), spec.trim()),
            Some(_) => return Err(fail("the name before `=` is empty".into())),
            None => (input.trim(), input.trim()),
        };
        let (kind, args) = spec
            .split_once(':')
            .ok_or_else(|| fail(GRAMMAR.to_string()))?;
        let kind = match kind {
            "fixed" => fixed(args),
            "structure" => structure(args),
            "parent-child" => parent_child(args),
            "window" => window(args),
            "external" if !args.is_empty() => Ok(StrategyKind::External {
                path: PathBuf::from(args),
            }),
            "external" => Err("external needs a file: external:FILE".to_string()),
            other => Err(format!("unknown kind `{other}`; {GRAMMAR}")),
        }
        .map_err(fail)?;
        if let StrategyKind::Builtin { spec, expand } = &kind {
            spec.validate().map_err(|e| fail(e.to_string()))?;
            expand.validate().map_err(|e| fail(e.to_string()))?;
        }
        Ok(Strategy {
            label: label.to_string(),
            kind,
        })
    }

    /// The strategy with its sizes in tokens counted in `unit` (see
    /// [`ChunkSpec::in_tokens_of`]).
    pub fn in_tokens_of(mut self, unit: SizeUnit) -> Strategy {
        if let StrategyKind::Builtin { spec, .. } = &mut self.kind {
            *spec = spec.in_tokens_of(unit);
        }
        self
    }

    /// The expansion searches use: the parent, or a window of neighbouring children.
    pub fn expand(&self) -> Expand {
        match &self.kind {
            StrategyKind::Builtin { expand, .. } => *expand,
            StrategyKind::External { .. } => Expand::Parent,
        }
    }
}

impl fmt::Display for Strategy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.label)
    }
}

fn number(s: &str, what: &str) -> Result<usize, String> {
    match s.parse::<usize>() {
        Ok(n) if n > 0 => Ok(n),
        _ => Err(format!("{what} `{s}` is not a positive whole number")),
    }
}

/// A size, in tokens when it ends in `t`.
fn sized(s: &str, what: &str) -> Result<(usize, SizeUnit), String> {
    match s.strip_suffix('t') {
        Some(tokens) => Ok((number(tokens, what)?, SizeUnit::Embedder)),
        None => Ok((number(s, what)?, SizeUnit::Chars)),
    }
}

/// `SIZE[/OVERLAP]`, the overlap smaller than the size and in its unit (its `t` optional).
fn size_overlap(args: &str) -> Result<(usize, usize, SizeUnit), String> {
    let (size, overlap) = args.split_once('/').unwrap_or((args, "0"));
    let (size, unit) = sized(size, "size")?;
    let overlap = match overlap.strip_suffix('t') {
        Some(o) if unit.is_tokens() => o,
        Some(_) => return Err(format!("overlap `{overlap}` is in tokens, the size is not")),
        None => overlap,
    };
    let overlap = overlap
        .parse::<usize>()
        .map_err(|_| format!("overlap `{overlap}` is not a whole number"))?;
    check_overlap(size, overlap)?;
    Ok((size, overlap, unit))
}

fn check_overlap(size: usize, overlap: usize) -> Result<(), String> {
    if overlap >= size {
        return Err(format!(
            "overlap {overlap} must be smaller than size {size}"
        ));
    }
    Ok(())
}

/// A spec whose children are their own parents.
fn plain_spec(child: ChildStrategy, heading_depth: usize) -> ChunkSpec {
    ChunkSpec {
        child,
        parent: ParentStrategy::Child,
        heading_depth,
        ..ChunkSpec::default()
    }
}

/// A strategy whose children are the reading units.
fn plain(child: ChildStrategy, heading_depth: usize) -> StrategyKind {
    StrategyKind::Builtin {
        spec: plain_spec(child, heading_depth),
        expand: Expand::Parent,
    }
}

fn fixed(args: &str) -> Result<StrategyKind, String> {
    let (size, overlap, unit) = size_overlap(args)?;
    // The baseline embeds the bare window, as the anchors' fixed chunker did.
    Ok(plain(
        ChildStrategy::Fixed {
            size,
            overlap,
            unit,
        },
        0,
    ))
}

fn structure_child(target: usize, overlap: usize, unit: SizeUnit) -> ChildStrategy {
    match unit {
        SizeUnit::Chars => ChildStrategy::Structure { target, overlap },
        unit => ChildStrategy::StructureIn {
            target,
            overlap,
            unit,
        },
    }
}

fn structure(args: &str) -> Result<StrategyKind, String> {
    let (size, overlap, unit) = size_overlap(args)?;
    Ok(plain(
        structure_child(size, overlap, unit),
        ChunkSpec::default().heading_depth,
    ))
}

fn parent_child(args: &str) -> Result<StrategyKind, String> {
    let (parent, child) = args
        .split_once('/')
        .ok_or("expected parent-child:PARENT/CHILD, e.g. 1200/300, 1024t/256t or section/300")?;
    let (child_size, unit) = sized(child, "child size")?;
    let (parent_size, parent) = match parent.strip_prefix("section") {
        Some("") => {
            if unit.is_tokens() {
                return Err("a section parent in tokens needs its size: section1024t/256t".into());
            }
            let max = folio::chunk::DEFAULT_SECTION_MAX;
            (max, ParentStrategy::Section { max })
        }
        Some(max) => match sized(max, "section size")? {
            (max, SizeUnit::Chars) => (max, ParentStrategy::Section { max }),
            (max, unit) => (max, ParentStrategy::SectionIn { max, unit }),
        },
        None => match sized(parent, "parent size")? {
            (size, SizeUnit::Chars) => (size, ParentStrategy::Fixed { size }),
            (size, unit) => (size, ParentStrategy::FixedIn { size, unit }),
        },
    };
    if child_size > parent_size {
        return Err(format!(
            "child size {child_size} is larger than parent size {parent_size}"
        ));
    }
    Ok(StrategyKind::Builtin {
        spec: ChunkSpec {
            child: structure_child(child_size, 0, unit),
            parent,
            ..ChunkSpec::default()
        },
        expand: Expand::Parent,
    })
}

fn window(args: &str) -> Result<StrategyKind, String> {
    let (size, n) = args
        .split_once('/')
        .ok_or("expected window:SIZE/N, e.g. 300/1")?;
    let neighbours = n
        .parse::<usize>()
        .map_err(|_| format!("neighbours `{n}` is not a whole number"))?;
    let (size, unit) = sized(size, "size")?;
    Ok(StrategyKind::Builtin {
        spec: plain_spec(
            structure_child(size, 0, unit),
            ChunkSpec::default().heading_depth,
        ),
        expand: Expand::Window(neighbours),
    })
}
