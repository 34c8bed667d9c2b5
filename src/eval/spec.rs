//! Strategy specs: the short strings `folio eval --strategy` takes, such as `fixed:500/80`,
//! `structure:500`, `parent-child:1200/300`, `window:300/1` or `lc=external:out/lc.jsonl`.

use std::fmt;
use std::path::PathBuf;

use crate::chunk::{ChildStrategy, ChunkSpec, ParentStrategy, SizeUnit};
use crate::retrieve::Expand;

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

const GRAMMAR: &str = "expected fixed:SIZE[t][/OVERLAP], structure:SIZE[/OVERLAP], \
parent-child:PARENT/CHILD (PARENT a size or `section`), window:SIZE/N or external:FILE, \
optionally prefixed by NAME=";

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

/// `SIZE[/OVERLAP]`, the overlap smaller than the size.
fn size_overlap(args: &str) -> Result<(&str, usize), String> {
    let (size, overlap) = match args.split_once('/') {
        Some((size, overlap)) => (size, overlap_number(overlap)?),
        None => (args, 0),
    };
    Ok((size, overlap))
}

fn overlap_number(s: &str) -> Result<usize, String> {
    s.parse::<usize>()
        .map_err(|_| format!("overlap `{s}` is not a whole number"))
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
    let (size, overlap) = size_overlap(args)?;
    let (size, unit) = match size.strip_suffix('t') {
        Some(tokens) => (number(tokens, "size")?, SizeUnit::Tokens),
        None => (number(size, "size")?, SizeUnit::Chars),
    };
    check_overlap(size, overlap)?;
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

fn structure_child(size: &str, overlap: usize) -> Result<ChildStrategy, String> {
    let target = number(size, "size")?;
    check_overlap(target, overlap)?;
    Ok(ChildStrategy::Structure { target, overlap })
}

fn structure(args: &str) -> Result<StrategyKind, String> {
    let (size, overlap) = size_overlap(args)?;
    Ok(plain(
        structure_child(size, overlap)?,
        ChunkSpec::default().heading_depth,
    ))
}

fn parent_child(args: &str) -> Result<StrategyKind, String> {
    let (parent, child) = args
        .split_once('/')
        .ok_or("expected parent-child:PARENT/CHILD, e.g. 1200/300 or section/300")?;
    let child_size = number(child, "child size")?;
    let parent = match parent.strip_prefix("section") {
        Some("") => ParentStrategy::Section {
            max: crate::chunk::DEFAULT_SECTION_MAX,
        },
        Some(max) => ParentStrategy::Section {
            max: number(max, "section size")?,
        },
        None => ParentStrategy::Fixed {
            size: number(parent, "parent size")?,
        },
    };
    let parent_size = match parent {
        ParentStrategy::Section { max } => max,
        ParentStrategy::Fixed { size } => size,
        ParentStrategy::Child => child_size,
    };
    if child_size > parent_size {
        return Err(format!(
            "child size {child_size} is larger than parent size {parent_size}"
        ));
    }
    Ok(StrategyKind::Builtin {
        spec: ChunkSpec {
            child: structure_child(child, 0)?,
            parent,
            heading_depth: ChunkSpec::default().heading_depth,
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
    Ok(StrategyKind::Builtin {
        spec: plain_spec(
            structure_child(size, 0)?,
            ChunkSpec::default().heading_depth,
        ),
        expand: Expand::Window(neighbours),
    })
}
