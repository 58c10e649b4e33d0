# cpu area: see HACKING.md.
