create table [Purchasing].[Vendor] (
    [VendorID] int not null,
    [AccountNumber] nvarchar(15) not null,
    [Name] nvarchar(50) not null,
    [CreditRating] tinyint not null,
    [PreferredVendorStatus] bit not null,
    [ActiveFlag] bit not null,
    [PurchasingWebServiceURL] nvarchar(1024) null,
    [ModifiedDate] datetime not null,
    constraint [PK_Vendor] primary key ([VendorID])
)
go
-- I: NONE
go
-- U: NONE
go
-- D: NONE
go
