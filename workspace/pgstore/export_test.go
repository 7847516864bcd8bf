package pgstore

// SetListPage sets the page size of List and ListRecords for a test and
// returns a function that restores it.
func SetListPage(n int) (restore func()) {
	old := listPage
	listPage = n
	return func() { listPage = old }
}
