# queue area: see HACKING.md.
