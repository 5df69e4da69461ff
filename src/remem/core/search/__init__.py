"""Search as one pipeline: the query read once (``query``), one pool gathered from the back-end
(``pool``), ranked by a pure function whose every lift is named (``fuse``); ``run`` ties them
together inside one snapshot of the store."""
