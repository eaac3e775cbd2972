module github.com/rho-mission/rho-mission/sdk/go

go 1.19
