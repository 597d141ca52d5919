"""Platform presets: the paper's SPARS platform files, 8-node copies of them, toy clusters."""
