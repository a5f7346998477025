//! The isolation layers that can be switched off for measuring only: the
//! bench opens a backend without one of them ([`LinuxBackend::open_measuring`])
//! to report what each costs on create → exec → destroy and on exec. Every
//! backend a caller opens with [`LinuxBackend::open`] has all of them; no
//! command-line flag or environment variable reaches this.
//!
//! [`LinuxBackend::open_measuring`]: crate::LinuxBackend::open_measuring
//! [`LinuxBackend::open`]: crate::LinuxBackend::open

/// A layer of the sandbox that has a switch for measuring.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Layer {
    /// Sandbox root is root of a user namespace mapped to an unprivileged
    /// host id range of its own.
    UserNamespace,
    /// The host image gets an `/etc` made per sandbox instead of none.
    CuratedEtc,
    /// The init is spawned with an explicit descriptor set and closes
    /// everything above it; exec children get exactly 0, 1 and 2.
    DescriptorHygiene,
}

impl Layer {
    /// Every layer, in the order the bench reports them.
    pub const ALL: [Layer; 3] = [
        Layer::UserNamespace,
        Layer::CuratedEtc,
        Layer::DescriptorHygiene,
    ];

    /// The layer's name in bench rows (`linux without <name>`).
    pub fn name(self) -> &'static str {
        match self {
            Layer::UserNamespace => "userns",
            Layer::CuratedEtc => "curated-etc",
            Layer::DescriptorHygiene => "fd-hygiene",
        }
    }
}

/// Which layers a backend applies: all of them, unless opened for measuring.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Layers {
    off: [bool; 3],
}

impl Default for Layers {
    fn default() -> Self {
        Layers::all()
    }
}

impl Layers {
    /// Every layer on: what every caller gets.
    pub const fn all() -> Layers {
        Layers { off: [false; 3] }
    }

    /// Every layer on but `without`.
    pub fn without(without: &[Layer]) -> Layers {
        let mut layers = Layers::all();
        for layer in without {
            layers.off[index(*layer)] = true;
        }
        layers
    }

    /// Whether `layer` is applied.
    pub fn on(&self, layer: Layer) -> bool {
        !self.off[index(layer)]
    }
}

fn index(layer: Layer) -> usize {
    match layer {
        Layer::UserNamespace => 0,
        Layer::CuratedEtc => 1,
        Layer::DescriptorHygiene => 2,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn all_is_the_default_and_without_switches_off_only_what_it_names() {
        assert_eq!(Layers::default(), Layers::all());
        let some = Layers::without(&[Layer::CuratedEtc]);
        for layer in Layer::ALL {
            assert_eq!(some.on(layer), layer != Layer::CuratedEtc, "{layer:?}");
        }
    }
}
