"""The platform presets, shipped as the paper's own SPARS platform files."""
