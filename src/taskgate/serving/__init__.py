"""What the gate's HTTP surfaces share (the gating proxy and the MCP gate's endpoints): the error
answer (:mod:`.errors`), whose a request is and reading its body (:mod:`.http`), and the
operators' requests, scopes and metrics (:mod:`.operator`). It sits below every surface, so that
no surface imports another."""
