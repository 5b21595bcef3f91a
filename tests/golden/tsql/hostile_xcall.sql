create table [we ird]]].[Order]]Details; --] (
    [it's] int not null,
    [a b] nvarchar(10) null,
    [[x]]] int not null,
    [名前] nvarchar(20) null,
    [--c] date null,
    constraint [PK_Order]]Details; --] primary key ([it's], [[x]]])
)
go
if object_id(N'[sp_MSins_we ird]]Order]]Details; --]', N'P') is not null drop procedure [sp_MSins_we ird]]Order]]Details; --]
go
create procedure [sp_MSins_we ird]]Order]]Details; --]
    @c1 int,
    @c2 nvarchar(10),
    @c3 int,
    @c4 nvarchar(20),
    @c5 date
as
begin  
	insert into [we ird]]].[Order]]Details; --] (
		[it's],
		[a b],
		[[x]]],
		[名前],
		[--c]
	) values (
		@c1,
		@c2,
		@c3,
		@c4,
		@c5	) 
end
go
if object_id(N'[sp_MSupd_we ird]]Order]]Details; --]', N'P') is not null drop procedure [sp_MSupd_we ird]]Order]]Details; --]
go
create procedure [sp_MSupd_we ird]]Order]]Details; --]
		@c1_old int,
		@c2_old nvarchar(10),
		@c3_old int,
		@c4_old nvarchar(20),
		@c5_old date,
		@c1 int,
		@c2 nvarchar(10),
		@c3 int,
		@c4 nvarchar(20),
		@c5 date
as
begin  
	declare @primarykey_text nvarchar(100) = ''
update [we ird]]].[Order]]Details; --] set
		[it's] = @c1,
		[a b] = @c2,
		[[x]]] = @c3,
		[名前] = @c4,
		[--c] = @c5
	where [it's] = @c1_old
  and [[x]]] = @c3_old
if @@rowcount = 0
    if @@microsoftversion>0x07320000
		Begin
			if exists (Select * from sys.all_parameters where object_id = OBJECT_ID('sp_MSreplraiserror') and [name] = '@param3')
			Begin
				
				set @primarykey_text = @primarykey_text + '[it''s] = ' + convert(nvarchar(100),@c1_old,1) + ', '
				set @primarykey_text = @primarykey_text + '[[x]]] = ' + convert(nvarchar(100),@c3_old,1)
				exec sp_MSreplraiserror @errorid=20598, @param1=N'[we ird]]].[Order]]Details; --]', @param2=@primarykey_text, @param3=13233 
			End
			Else
				exec sp_MSreplraiserror @errorid=20598
		End
end
go
if object_id(N'[sp_MSdel_we ird]]Order]]Details; --]', N'P') is not null drop procedure [sp_MSdel_we ird]]Order]]Details; --]
go
create procedure [sp_MSdel_we ird]]Order]]Details; --]
		@c1 int,
		@c2 nvarchar(10),
		@c3 int,
		@c4 nvarchar(20),
		@c5 date
as
begin  
	declare @primarykey_text nvarchar(100) = ''
	delete [we ird]]].[Order]]Details; --] 
	where [it's] = @c1
  and [[x]]] = @c3
if @@rowcount = 0
    if @@microsoftversion>0x07320000
		Begin
			if exists (Select * from sys.all_parameters where object_id = OBJECT_ID('sp_MSreplraiserror') and [name] = '@param3')
			Begin
				
				set @primarykey_text = @primarykey_text + '[it''s] = ' + convert(nvarchar(100),@c1,1) + ', '
				set @primarykey_text = @primarykey_text + '[[x]]] = ' + convert(nvarchar(100),@c3,1)
				exec sp_MSreplraiserror @errorid=20598, @param1=N'[we ird]]].[Order]]Details; --]', @param2=@primarykey_text, @param3=13234 
			End
			Else
				exec sp_MSreplraiserror @errorid=20598
		End
end
go
