"""The CLI's commands, one module per group; ``remem.cli`` registers them on the app."""
