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
		@c1 int = NULL,
		@c2 nvarchar(10) = NULL,
		@c3 int = NULL,
		@c4 nvarchar(20) = NULL,
		@c5 date = NULL,
		@pkc1 int = NULL,
		@pkc2 int = NULL,
		@bitmap binary(1)
as
begin  
	declare @primarykey_text nvarchar(100) = ''
if (substring(@bitmap,1,1) & 1 = 1) or
 (substring(@bitmap,1,1) & 4 = 4)
begin 
update [we ird]]].[Order]]Details; --] set
		[it's] = case substring(@bitmap,1,1) & 1 when 1 then @c1 else [it's] end,
		[a b] = case substring(@bitmap,1,1) & 2 when 2 then @c2 else [a b] end,
		[[x]]] = case substring(@bitmap,1,1) & 4 when 4 then @c3 else [[x]]] end,
		[名前] = case substring(@bitmap,1,1) & 8 when 8 then @c4 else [名前] end,
		[--c] = case substring(@bitmap,1,1) & 16 when 16 then @c5 else [--c] end
	where [it's] = @pkc1
  and [[x]]] = @pkc2
if @@rowcount = 0
    if @@microsoftversion>0x07320000
		Begin
			if exists (Select * from sys.all_parameters where object_id = OBJECT_ID('sp_MSreplraiserror') and [name] = '@param3')
			Begin
				
				set @primarykey_text = @primarykey_text + '[it''s] = ' + convert(nvarchar(100),@pkc1,1) + ', '
				set @primarykey_text = @primarykey_text + '[[x]]] = ' + convert(nvarchar(100),@pkc2,1)
				exec sp_MSreplraiserror @errorid=20598, @param1=N'[we ird]]].[Order]]Details; --]', @param2=@primarykey_text, @param3=13233 
			End
			Else
				exec sp_MSreplraiserror @errorid=20598
		End
end  
else
begin 
update [we ird]]].[Order]]Details; --] set
		[a b] = case substring(@bitmap,1,1) & 2 when 2 then @c2 else [a b] end,
		[名前] = case substring(@bitmap,1,1) & 8 when 8 then @c4 else [名前] end,
		[--c] = case substring(@bitmap,1,1) & 16 when 16 then @c5 else [--c] end
	where [it's] = @pkc1
  and [[x]]] = @pkc2
if @@rowcount = 0
    if @@microsoftversion>0x07320000
		Begin
			if exists (Select * from sys.all_parameters where object_id = OBJECT_ID('sp_MSreplraiserror') and [name] = '@param3')
			Begin
				
				set @primarykey_text = @primarykey_text + '[it''s] = ' + convert(nvarchar(100),@pkc1,1) + ', '
				set @primarykey_text = @primarykey_text + '[[x]]] = ' + convert(nvarchar(100),@pkc2,1)
				exec sp_MSreplraiserror @errorid=20598, @param1=N'[we ird]]].[Order]]Details; --]', @param2=@primarykey_text, @param3=13233 
			End
			Else
				exec sp_MSreplraiserror @errorid=20598
		End
end 
end
go
if object_id(N'[sp_MSdel_we ird]]Order]]Details; --]', N'P') is not null drop procedure [sp_MSdel_we ird]]Order]]Details; --]
go
create procedure [sp_MSdel_we ird]]Order]]Details; --]
		@pkc1 int,
		@pkc2 int
as
begin  
	declare @primarykey_text nvarchar(100) = ''
	delete [we ird]]].[Order]]Details; --] 
	where [it's] = @pkc1
  and [[x]]] = @pkc2
if @@rowcount = 0
    if @@microsoftversion>0x07320000
		Begin
			if exists (Select * from sys.all_parameters where object_id = OBJECT_ID('sp_MSreplraiserror') and [name] = '@param3')
			Begin
				
				set @primarykey_text = @primarykey_text + '[it''s] = ' + convert(nvarchar(100),@pkc1,1) + ', '
				set @primarykey_text = @primarykey_text + '[[x]]] = ' + convert(nvarchar(100),@pkc2,1)
				exec sp_MSreplraiserror @errorid=20598, @param1=N'[we ird]]].[Order]]Details; --]', @param2=@primarykey_text, @param3=13234 
			End
			Else
				exec sp_MSreplraiserror @errorid=20598
		End
end
go
