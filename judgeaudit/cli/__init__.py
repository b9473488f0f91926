"""The `judgeaudit` command's subcommands, one module each (``add_parser``, ``handle``)."""
