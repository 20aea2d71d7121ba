//! Closed sets of named values (`--format table`, `loop_io = "direct"`): each value's name and
//! one-line description in one table, so a front end can list, parse and explain them while the
//! library stays free of any command-line parser (the edge adapts a [`Choice`] to clap,
//! `src/cli.rs`).

/// A value of a closed set, named on the command line or in a suite file.
pub trait Choice: Copy + PartialEq + 'static {
    /// Every value with its name and a one-line description (the text `--help` lists), in the
    /// order they are listed.
    const CHOICES: &'static [(Self, &'static str, &'static str)];

    /// The value's name.
    fn name(self) -> &'static str {
        Self::CHOICES
            .iter()
            .find(|(v, ..)| *v == self)
            .map(|&(_, name, _)| name)
            .expect("every value is in CHOICES")
    }

    /// The value named `s` (exactly); the error lists the names.
    fn from_name(s: &str) -> Result<Self, UnknownChoice> {
        Self::CHOICES
            .iter()
            .find(|(_, name, _)| *name == s)
            .map(|&(v, ..)| v)
            .ok_or_else(|| UnknownChoice {
                given: s.to_string(),
                names: Self::CHOICES.iter().map(|&(_, name, _)| name).collect(),
            })
    }
}

/// A name that is none of a [`Choice`]'s.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("`{given}`: use one of {}", names.join(", "))]
pub struct UnknownChoice {
    /// What was given.
    pub given: String,
    /// The names accepted, in order.
    pub names: Vec<&'static str>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Clone, Copy, Debug, PartialEq)]
    enum Fruit {
        Apple,
        Pear,
    }

    impl Choice for Fruit {
        const CHOICES: &'static [(Self, &'static str, &'static str)] =
            &[(Fruit::Apple, "apple", "Round"), (Fruit::Pear, "pear", "Not round")];
    }

    #[test]
    fn names_read_back_and_an_unknown_one_lists_them() {
        for &(v, name, _) in Fruit::CHOICES {
            assert_eq!(v.name(), name);
            assert_eq!(Fruit::from_name(name), Ok(v));
        }
        let e = Fruit::from_name("Apple").unwrap_err();
        assert_eq!(e.to_string(), "`Apple`: use one of apple, pear");
    }
}
