# cuda area: see HACKING.md.
