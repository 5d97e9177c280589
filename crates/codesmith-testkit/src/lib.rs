//! Test support: the scripted model server.
