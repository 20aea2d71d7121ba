//! (Skeleton: the engine helper fills this in.)
