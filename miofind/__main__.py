"""``python -m miofind``: the ``miofind`` command (same options, same help, same exit codes)."""

from miofind.cli import main

if __name__ == "__main__":
    main(prog_name="miofind")
