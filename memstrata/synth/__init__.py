"""After the controller: organized notes (APDMem §3.3) and the final answer."""
