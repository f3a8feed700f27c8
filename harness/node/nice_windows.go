package node

// Niced is false on Windows: no nice values.
func Niced() bool { return false }
