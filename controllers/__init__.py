"""The bundled controller program: the `jobcore` command and the controllers it wires up."""
