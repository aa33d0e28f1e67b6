//! Model-free reclaim for abridge: tool-output pruning, superseded and useless elision, shake into artifacts, trim.
