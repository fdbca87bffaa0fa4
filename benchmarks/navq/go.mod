module gocalls

go 1.22
