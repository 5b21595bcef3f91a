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
		@pkc1 int,
		@bitmap binary(1)
as
begin  
	declare @primarykey_text nvarchar(100) = ''
if (substring(@bitmap,1,1) & 1 = 1)
begin 
update [Purchasing].[Vendor] set
		[VendorID] = case substring(@bitmap,1,1) & 1 when 1 then @c1 else [VendorID] end,
		[AccountNumber] = case substring(@bitmap,1,1) & 2 when 2 then @c2 else [AccountNumber] end,
		[Name] = case substring(@bitmap,1,1) & 4 when 4 then @c3 else [Name] end,
		[CreditRating] = case substring(@bitmap,1,1) & 8 when 8 then @c4 else [CreditRating] end,
		[PreferredVendorStatus] = case substring(@bitmap,1,1) & 16 when 16 then @c5 else [PreferredVendorStatus] end,
		[ActiveFlag] = case substring(@bitmap,1,1) & 32 when 32 then @c6 else [ActiveFlag] end,
		[PurchasingWebServiceURL] = case substring(@bitmap,1,1) & 64 when 64 then @c7 else [PurchasingWebServiceURL] end,
		[ModifiedDate] = case substring(@bitmap,1,1) & 128 when 128 then @c8 else [ModifiedDate] end
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
else
begin 
update [Purchasing].[Vendor] set
		[AccountNumber] = case substring(@bitmap,1,1) & 2 when 2 then @c2 else [AccountNumber] end,
		[Name] = case substring(@bitmap,1,1) & 4 when 4 then @c3 else [Name] end,
		[CreditRating] = case substring(@bitmap,1,1) & 8 when 8 then @c4 else [CreditRating] end,
		[PreferredVendorStatus] = case substring(@bitmap,1,1) & 16 when 16 then @c5 else [PreferredVendorStatus] end,
		[ActiveFlag] = case substring(@bitmap,1,1) & 32 when 32 then @c6 else [ActiveFlag] end,
		[PurchasingWebServiceURL] = case substring(@bitmap,1,1) & 64 when 64 then @c7 else [PurchasingWebServiceURL] end,
		[ModifiedDate] = case substring(@bitmap,1,1) & 128 when 128 then @c8 else [ModifiedDate] end
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
end
go
if object_id(N'[sp_MSdel_PurchasingVendor]', N'P') is not null drop procedure [sp_MSdel_PurchasingVendor]
go
create procedure [sp_MSdel_PurchasingVendor]
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
	declare @primarykey_text nvarchar(100) = ''
	delete [Purchasing].[Vendor] 
	where [VendorID] = @c1
if @@rowcount = 0
    if @@microsoftversion>0x07320000
		Begin
			if exists (Select * from sys.all_parameters where object_id = OBJECT_ID('sp_MSreplraiserror') and [name] = '@param3')
			Begin
				
				set @primarykey_text = @primarykey_text + '[VendorID] = ' + convert(nvarchar(100),@c1,1)
				exec sp_MSreplraiserror @errorid=20598, @param1=N'[Purchasing].[Vendor]', @param2=@primarykey_text, @param3=13234 
			End
			Else
				exec sp_MSreplraiserror @errorid=20598
		End
end
go
