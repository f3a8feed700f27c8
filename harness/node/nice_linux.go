package node

// nicenessOf is the nice value from syscall.Getpriority's result: Linux's
// raw system call returns 20 - nice.
func nicenessOf(p int) int { return 20 - p }
