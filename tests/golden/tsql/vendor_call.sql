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
if object_id(N'[sp_MSins_PurchasingVendor]', N'P') is not null drop procedure [sp_MSins_PurchasingVendor]
go
create procedure [sp_MSins_PurchasingVendor]
    @c1 int,
    @c2 nvarchar(15),
    @c3 nvarchar(50),
    @c4 tinyint,
    @c5 bit,
    @c6 bit,
    @c7 nvarchar(1024),
    @c8 datetime
as
begin  
	insert into [Purchasing].[Vendor] (
		[VendorID],
		[AccountNumber],
		[Name],
		[CreditRating],
		[PreferredVendorStatus],
		[ActiveFlag],
		[PurchasingWebServiceURL],
		[ModifiedDate]
	) values (
		@c1,
		@c2,
		@c3,
		@c4,
		@c5,
		@c6,
		@c7,
		@c8	) 
end
go
if object_id(N'[sp_MSupd_PurchasingVendor]', N'P') is not null drop procedure [sp_MSupd_PurchasingVendor]
go
create procedure [sp_MSupd_PurchasingVendor]
		@c1 int,
		@c2 nvarchar(15),
		@c3 nvarchar(50),
		@c4 tinyint,
		@c5 bit,
		@c6 bit,
		@c7 nvarchar(1024),
		@c8 datetime,
		@pkc1 int
as
begin  
	declare @primarykey_text nvarchar(100) = ''
update [Purchasing].[Vendor] set
		[VendorID] = @c1,
		[AccountNumber] = @c2,
		[Name] = @c3,
		[CreditRating] = @c4,
		[PreferredVendorStatus] = @c5,
		[ActiveFlag] = @c6,
		[PurchasingWebServiceURL] = @c7,
		[ModifiedDate] = @c8
	where [VendorID] = @pkc1
if @@rowcount = 0
    if @@microsoftversion>0x07320000
		Begin
			if exists (Select * from sys.all_parameters where object_id = OBJECT_ID('sp_MSreplraiserror') and [name] = '@param3')
			Begin
				
				set @primarykey_text = @primarykey_text + '[VendorID] = ' + convert(nvarchar(100),@pkc1,1)
				exec sp_MSreplraiserror @errorid=20598, @param1=N'[Purchasing].[Vendor]', @param2=@primarykey_text, @param3=13233 
			End
			Else
				exec sp_MSreplraiserror @errorid=20598
		End
end
go
if object_id(N'[sp_MSdel_PurchasingVendor]', N'P') is not null drop procedure [sp_MSdel_PurchasingVendor]
go
create procedure [sp_MSdel_PurchasingVendor]
		@pkc1 int
as
begin  
	declare @primarykey_text nvarchar(100) = ''
	delete [Purchasing].[Vendor] 
	where [VendorID] = @pkc1
if @@rowcount = 0
    if @@microsoftversion>0x07320000
		Begin
			if exists (Select * from sys.all_parameters where object_id = OBJECT_ID('sp_MSreplraiserror') and [name] = '@param3')
			Begin
				
				set @primarykey_text = @primarykey_text + '[VendorID] = ' + convert(nvarchar(100),@pkc1,1)
				exec sp_MSreplraiserror @errorid=20598, @param1=N'[Purchasing].[Vendor]', @param2=@primarykey_text, @param3=13234 
			End
			Else
				exec sp_MSreplraiserror @errorid=20598
		End
end
go
