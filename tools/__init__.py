"""Developer tools that build files the package ships (not shipped themselves)."""
