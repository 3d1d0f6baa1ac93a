# Per PTX file: its branches, and how many of them jump back to a label
# defined earlier in the file (a loop). Used by no-search.mlir.
FNR == 1 { files[++n] = FILENAME; split("", seen) }
/^\$L__[A-Za-z0-9_]+:$/ { seen[$1] = 1 }
/[ \t]bra(\.uni)?[ \t]/ {
  label = $NF
  sub(/;$/, "", label)
  branches[FILENAME]++
  if ((label ":") in seen)
    backward[FILENAME]++
}
END {
  for (i = 1; i <= n; i++) {
    name = files[i]
    sub(/.*\//, "", name)
    printf "%s: %d branches, %d backward\n", name, branches[files[i]] + 0,
           backward[files[i]] + 0
  }
}
