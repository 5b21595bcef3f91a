create table [dbo].[Wide] (
    [Note] nvarchar(max) null,
    [Id] bigint not null,
    [Amount] decimal(12,2) not null,
    [Price] money null,
    [Seen] datetimeoffset(3) null,
    [At] datetime2(7) null,
    [Code] char(3) null,
    [Blob] varbinary(max) null,
    [Ver] binary(8) null,
    [Flag] bit null,
    constraint [PK_Wide] primary key ([Id])
)
go
if object_id(N'[sp_MSins_dboWide]', N'P') is not null drop procedure [sp_MSins_dboWide]
go
create procedure [sp_MSins_dboWide]
    @c1 nvarchar(max),
    @c2 bigint,
    @c3 decimal(12,2),
    @c4 money,
    @c5 datetimeoffset(3),
    @c6 datetime2(7),
    @c7 char(3),
    @c8 varbinary(max),
    @c9 binary(8),
    @c10 bit
as
begin  
	insert into [dbo].[Wide] (
		[Note],
		[Id],
		[Amount],
		[Price],
		[Seen],
		[At],
		[Code],
		[Blob],
		[Ver],
		[Flag]
	) values (
		@c1,
		@c2,
		@c3,
		@c4,
		@c5,
		@c6,
		@c7,
		@c8,
		@c9,
		@c10	) 
end
go
if object_id(N'[sp_MSupd_dboWide]', N'P') is not null drop procedure [sp_MSupd_dboWide]
go
create procedure [sp_MSupd_dboWide]
		@c1 nvarchar(max) = NULL,
		@c2 bigint = NULL,
		@c3 decimal(12,2) = NULL,
		@c4 money = NULL,
		@c5 datetimeoffset(3) = NULL,
		@c6 datetime2(7) = NULL,
		@c7 char(3) = NULL,
		@c8 varbinary(max) = NULL,
		@c9 binary(8) = NULL,
		@c10 bit = NULL,
		@pkc1 bigint = NULL,
		@bitmap binary(2)
as
begin  
	declare @primarykey_text nvarchar(100) = ''
if (substring(@bitmap,1,1) & 2 = 2)
begin 
update [dbo].[Wide] set
		[Note] = case substring(@bitmap,1,1) & 1 when 1 then @c1 else [Note] end,
		[Id] = case substring(@bitmap,1,1) & 2 when 2 then @c2 else [Id] end,
		[Amount] = case substring(@bitmap,1,1) & 4 when 4 then @c3 else [Amount] end,
		[Price] = case substring(@bitmap,1,1) & 8 when 8 then @c4 else [Price] end,
		[Seen] = case substring(@bitmap,1,1) & 16 when 16 then @c5 else [Seen] end,
		[At] = case substring(@bitmap,1,1) & 32 when 32 then @c6 else [At] end,
		[Code] = case substring(@bitmap,1,1) & 64 when 64 then @c7 else [Code] end,
		[Blob] = case substring(@bitmap,1,1) & 128 when 128 then @c8 else [Blob] end,
		[Ver] = case substring(@bitmap,2,1) & 1 when 1 then @c9 else [Ver] end,
		[Flag] = case substring(@bitmap,2,1) & 2 when 2 then @c10 else [Flag] end
	where [Id] = @pkc1
if @@rowcount = 0
    if @@microsoftversion>0x07320000
		Begin
			if exists (Select * from sys.all_parameters where object_id = OBJECT_ID('sp_MSreplraiserror') and [name] = '@param3')
			Begin
				
				set @primarykey_text = @primarykey_text + '[Id] = ' + convert(nvarchar(100),@pkc1,1)
				exec sp_MSreplraiserror @errorid=20598, @param1=N'[dbo].[Wide]', @param2=@primarykey_text, @param3=13233 
			End
			Else
				exec sp_MSreplraiserror @errorid=20598
		End
end  
else
begin 
update [dbo].[Wide] set
		[Note] = case substring(@bitmap,1,1) & 1 when 1 then @c1 else [Note] end,
		[Amount] = case substring(@bitmap,1,1) & 4 when 4 then @c3 else [Amount] end,
		[Price] = case substring(@bitmap,1,1) & 8 when 8 then @c4 else [Price] end,
		[Seen] = case substring(@bitmap,1,1) & 16 when 16 then @c5 else [Seen] end,
		[At] = case substring(@bitmap,1,1) & 32 when 32 then @c6 else [At] end,
		[Code] = case substring(@bitmap,1,1) & 64 when 64 then @c7 else [Code] end,
		[Blob] = case substring(@bitmap,1,1) & 128 when 128 then @c8 else [Blob] end,
		[Ver] = case substring(@bitmap,2,1) & 1 when 1 then @c9 else [Ver] end,
		[Flag] = case substring(@bitmap,2,1) & 2 when 2 then @c10 else [Flag] end
	where [Id] = @pkc1
if @@rowcount = 0
    if @@microsoftversion>0x07320000
		Begin
			if exists (Select * from sys.all_parameters where object_id = OBJECT_ID('sp_MSreplraiserror') and [name] = '@param3')
			Begin
				
				set @primarykey_text = @primarykey_text + '[Id] = ' + convert(nvarchar(100),@pkc1,1)
				exec sp_MSreplraiserror @errorid=20598, @param1=N'[dbo].[Wide]', @param2=@primarykey_text, @param3=13233 
			End
			Else
				exec sp_MSreplraiserror @errorid=20598
		End
end 
end
go
if object_id(N'[sp_MSdel_dboWide]', N'P') is not null drop procedure [sp_MSdel_dboWide]
go
create procedure [sp_MSdel_dboWide]
		@pkc1 bigint
as
begin  
	declare @primarykey_text nvarchar(100) = ''
	delete [dbo].[Wide] 
	where [Id] = @pkc1
if @@rowcount = 0
    if @@microsoftversion>0x07320000
		Begin
			if exists (Select * from sys.all_parameters where object_id = OBJECT_ID('sp_MSreplraiserror') and [name] = '@param3')
			Begin
				
				set @primarykey_text = @primarykey_text + '[Id] = ' + convert(nvarchar(100),@pkc1,1)
				exec sp_MSreplraiserror @errorid=20598, @param1=N'[dbo].[Wide]', @param2=@primarykey_text, @param3=13234 
			End
			Else
				exec sp_MSreplraiserror @errorid=20598
		End
end
go
