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
		@c1_old nvarchar(max),
		@c2_old bigint,
		@c3_old decimal(12,2),
		@c4_old money,
		@c5_old datetimeoffset(3),
		@c6_old datetime2(7),
		@c7_old char(3),
		@c8_old varbinary(max),
		@c9_old binary(8),
		@c10_old bit,
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
	declare @primarykey_text nvarchar(100) = ''
update [dbo].[Wide] set
		[Note] = @c1,
		[Id] = @c2,
		[Amount] = @c3,
		[Price] = @c4,
		[Seen] = @c5,
		[At] = @c6,
		[Code] = @c7,
		[Blob] = @c8,
		[Ver] = @c9,
		[Flag] = @c10
	where [Id] = @c2_old
if @@rowcount = 0
    if @@microsoftversion>0x07320000
		Begin
			if exists (Select * from sys.all_parameters where object_id = OBJECT_ID('sp_MSreplraiserror') and [name] = '@param3')
			Begin
				
				set @primarykey_text = @primarykey_text + '[Id] = ' + convert(nvarchar(100),@c2_old,1)
				exec sp_MSreplraiserror @errorid=20598, @param1=N'[dbo].[Wide]', @param2=@primarykey_text, @param3=13233 
			End
			Else
				exec sp_MSreplraiserror @errorid=20598
		End
end
go
if object_id(N'[sp_MSdel_dboWide]', N'P') is not null drop procedure [sp_MSdel_dboWide]
go
create procedure [sp_MSdel_dboWide]
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
	declare @primarykey_text nvarchar(100) = ''
	delete [dbo].[Wide] 
	where [Id] = @c2
if @@rowcount = 0
    if @@microsoftversion>0x07320000
		Begin
			if exists (Select * from sys.all_parameters where object_id = OBJECT_ID('sp_MSreplraiserror') and [name] = '@param3')
			Begin
				
				set @primarykey_text = @primarykey_text + '[Id] = ' + convert(nvarchar(100),@c2,1)
				exec sp_MSreplraiserror @errorid=20598, @param1=N'[dbo].[Wide]', @param2=@primarykey_text, @param3=13234 
			End
			Else
				exec sp_MSreplraiserror @errorid=20598
		End
end
go
