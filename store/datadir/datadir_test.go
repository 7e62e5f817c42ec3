package datadir

import "testing"

func TestDataDirBelongsToOneName(t *testing.T) {
	dir := t.TempDir()
	if err := Claim(dir, "a"); err != nil {
		t.Fatal(err)
	}
	if err := Claim(dir, "a"); err != nil {
		t.Fatalf("same name again: %v", err)
	}
	if err := Claim(dir, "b"); err == nil {
		t.Fatalf("claiming a's data dir as b succeeded, want an error")
	}
}
