"""CLI subcommands, one module each (build, tune, db, bench, run...)."""
